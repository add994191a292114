"""Room kept aside in a run directory, so a capture whose disk fills up can still finish run.json."""

from __future__ import annotations

import os
from pathlib import Path

from ..model import rundir

# perf's last write (its ring buffers, about 0.5 MiB a CPU, then the header and build-ids) and then
# run.json, counters.json, threads.json and offcpu.folded of a busy server fit in it
ROOM_BASE, ROOM_PER_CPU = 4 << 20, 1 << 20


def room_bytes() -> int:
    return ROOM_BASE + ROOM_PER_CPU * (os.cpu_count() or 1)


PERF_FULL = "No space left on device"  # what perf record prints when a write of perf.data fails


def hold(out_dir: Path) -> None:
    """Allocate the room (best effort: a filesystem that cannot allocate it is left as it is)."""
    path = out_dir / rundir.ROOM
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError:
        return
    try:
        os.posix_fallocate(fd, 0, room_bytes())
    except OSError:
        path.unlink(missing_ok=True)
    finally:
        os.close(fd)


def release(out_dir: Path) -> None:
    """Give the room back to the filesystem: when perf is stopped on a full disk (its buffers are still to
    be written), and before the files that end a capture are written."""
    try:
        (out_dir / rundir.ROOM).unlink(missing_ok=True)
    except OSError:
        pass


def perf_ran_out(stderr: str) -> bool:
    """Whether perf record met a full disk (it goes on, and its file then lacks the samples it lost)."""
    return PERF_FULL in stderr

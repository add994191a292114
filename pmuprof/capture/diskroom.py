"""Room kept aside in a run directory, so a capture whose disk fills up can still finish run.json."""

from __future__ import annotations

import os
import re
from pathlib import Path

from .. import infile
from ..model import rundir

# perf's last write (its ring buffers, about 0.5 MiB a CPU, then the header and build-ids) and the off-CPU
# tracer's output fit in what is given back when perf is stopped (``shrink``); run.json, counters.json,
# threads.json and offcpu.folded of a busy server in the LAST_FILES kept until pmuprof writes them (``release``)
ROOM_BASE, ROOM_PER_CPU, LAST_FILES = 4 << 20, 1 << 20, 2 << 20


def room_bytes() -> int:
    return ROOM_BASE + ROOM_PER_CPU * (os.cpu_count() or 1)


PERF_FULL = "No space left on device"  # what perf record prints when a write of perf.data fails


BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
# The room's first line says whose it is: the capture's pid, that process's start time and the boot
_HEADER = re.compile(rb"pmuprof-room\tpid=(\d+)\tstart=(\d+)\tboot=([0-9a-f-]{36})\n")
SWEEP_MAX = 4096  # sibling entries looked at for a stale room


def _boot() -> str:
    try:
        return BOOT_ID.read_text().strip()
    except OSError:
        return ""


def _started(pid: int) -> int | None:
    """A process's start time (clock ticks after boot: /proc/PID/stat field 22), None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
        return int(text[text.rindex(")") + 2 :].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def hold(out_dir: Path) -> None:
    """Allocate the room (best effort: a filesystem that cannot allocate it is left as it is), its first
    line naming the capture; rooms that killed captures left in the run directories beside it go."""
    sweep_beside(out_dir)
    path = out_dir / rundir.ROOM
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError:
        return
    try:
        os.write(fd, f"pmuprof-room\tpid={os.getpid()}\tstart={_started(os.getpid())}\tboot={_boot()}\n".encode())
        os.posix_fallocate(fd, 0, room_bytes())
    except OSError:
        path.unlink(missing_ok=True)
    finally:
        os.close(fd)


def stale(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds a room its capture left when it was killed: a regular file of this user
    or root whose first line names a capture process that is gone (another boot, or its pid is no longer
    that process). Anything else is not proven pmuprof's and stale, and stays."""
    try:
        fd = infile.open_evidence(run_dir / rundir.ROOM, infile.ANY_SIZE)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as fh:
        found = _HEADER.match(fh.read(128))
    if found is None:
        return False
    pid, start, boot = int(found[1]), int(found[2]), found[3].decode()
    return boot != _boot() or _started(pid) != start


def sweep(run_dir: Path) -> bool:
    """Delete a stale room of ``run_dir`` (its 4 MiB + 1 MiB a CPU go back to the filesystem); whether it did."""
    if run_dir.is_symlink() or not stale(run_dir):
        return False
    try:
        (run_dir / rundir.ROOM).unlink()
    except OSError:
        return False
    return True


def sweep_beside(run_dir: Path) -> None:
    """Sweep the run directories next to ``run_dir`` (the next capture's, in the same parent)."""
    try:
        with os.scandir(run_dir.parent) as entries:
            for _, entry in zip(range(SWEEP_MAX), entries):
                if entry.is_dir(follow_symlinks=False) and os.path.lexists(Path(entry.path) / rundir.ROOM):
                    sweep(Path(entry.path))
    except OSError:
        pass


def shrink(out_dir: Path) -> None:
    """Give back all of the room but LAST_FILES: perf and the off-CPU tracer write their last buffers as they
    stop. pmuprof's own last files get the rest (``release``) only once they are written: another writer
    still filling the disk cannot take that part while perf stops."""
    try:
        fd = os.open(out_dir / rundir.ROOM, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    try:
        if os.fstat(fd).st_size > LAST_FILES:
            os.ftruncate(fd, LAST_FILES)
    except OSError:
        pass
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

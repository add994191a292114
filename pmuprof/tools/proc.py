"""Run a helper program with a timeout that holds: its own process group, output in files, the group killed."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from typing import Sequence

KILL_WAIT_S = 5.0


def kill_group(proc: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
    """Signal the process group ``proc`` leads (started with start_new_session)."""
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def run(argv: Sequence[str], timeout: float, input: str | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Like ``subprocess.run(capture_output=True, text=True)``, but a timeout always returns in time.

    Output goes to temporary files, not pipes (a grandchild holding a pipe cannot keep us waiting),
    the program runs in its own session, and on timeout its whole group is killed before
    ``subprocess.TimeoutExpired`` is raised. Output is decoded as UTF-8 with bad bytes escaped.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as feed:
        if input is not None:
            feed.write(input.encode("utf-8", "surrogateescape"))
            feed.seek(0)
        proc = subprocess.Popen(list(argv), stdin=feed if input is not None else subprocess.DEVNULL, stdout=out,
                                stderr=err, start_new_session=True, env=env)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            proc.wait(timeout=KILL_WAIT_S)
            raise
        except BaseException:  # Ctrl-C / SIGTERM while waiting: never leave it behind
            kill_group(proc)
            proc.wait(timeout=KILL_WAIT_S)
            raise
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(list(argv), proc.returncode,
                                           out.read().decode("utf-8", "backslashreplace"),
                                           err.read().decode("utf-8", "backslashreplace"))


def cpu_ticks(pid: int) -> int | None:
    """utime + stime of a process and its reaped children (clock ticks), None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return sum(int(f) for f in fields[11:15])
    except (OSError, IndexError, ValueError):
        return None


class Progress:
    """Tells a working program from a hung one: it is hung when none of its pids used CPU for ``idle_s``."""

    def __init__(self, pids: Sequence[int], idle_s: float) -> None:
        self.pids, self.idle_s = tuple(pids), idle_s
        self.last = self._ticks()
        self.since = time.monotonic()

    def _ticks(self) -> int:
        return sum(t for t in (cpu_ticks(p) for p in self.pids) if t is not None)

    def stalled(self) -> bool:
        now, ticks = time.monotonic(), self._ticks()
        if ticks != self.last:
            self.last, self.since = ticks, now
        return now - self.since >= self.idle_s

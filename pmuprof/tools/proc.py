"""Run a helper program with a timeout that holds: its own process group, output in files, the group killed."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
import time
from typing import Any, cast
from collections.abc import Sequence

KILL_WAIT_S = 5.0
STALL_S = 60.0  # a helper that used no CPU for this long is hung ($PMUPROF_STALL_S overrides)


def stall_s() -> float:
    """Seconds without CPU after which a helper program (perf, pmuprof-helper) counts as hung."""
    try:
        return max(0.5, float(os.environ.get("PMUPROF_STALL_S", STALL_S)))
    except ValueError:
        return STALL_S


class Hung(subprocess.TimeoutExpired):
    """The program used no CPU for stall_s() seconds (or ran past its timeout); its group was killed."""

    def __str__(self) -> str:
        return f"{self.cmd[0]} used no CPU for {self.timeout:.0f} s"


def kill_group(proc: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
    """Signal the process group ``proc`` leads (started with start_new_session)."""
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def run(
    argv: Sequence[str], timeout: float, input: str | None = None, env: dict[str, str] | None = None, stall: bool = True
) -> subprocess.CompletedProcess:
    """Like ``subprocess.run(capture_output=True, text=True)``, but a timeout always returns in time.

    Output goes to temporary files, not pipes (a grandchild holding a pipe cannot keep us waiting),
    the program runs in its own session, and on timeout its whole group is killed before
    ``subprocess.TimeoutExpired`` is raised (Hung when it used no CPU for stall_s(); ``stall=False``
    for programs that wait by design). Output is decoded as UTF-8 with bad bytes escaped.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as feed:
        if input is not None:
            feed.write(input.encode("utf-8", "surrogateescape"))
            feed.seek(0)
        proc = subprocess.Popen(
            list(argv),
            stdin=feed if input is not None else subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
            env=env,
        )
        try:
            wait_working(proc, timeout, stall_s() if stall else timeout)
        except BaseException:  # timed out, hung, or Ctrl-C / SIGTERM while waiting: never leave it behind
            kill_group(proc)
            proc.wait(timeout=KILL_WAIT_S)
            raise
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(
            list(argv),
            proc.returncode,
            out.read().decode("utf-8", "backslashreplace"),
            err.read().decode("utf-8", "backslashreplace"),
        )


def timeout_text(err: subprocess.TimeoutExpired) -> str:
    """'used no CPU for 60 s' or 'did not finish within 120 s'."""
    if isinstance(err, Hung):
        return f"used no CPU for {err.timeout:.0f} s"
    return f"did not finish within {err.timeout:.0f} s"


def wait_working(proc: subprocess.Popen, timeout: float, idle_s: float) -> int:
    """Wait for ``proc`` to exit; raise Hung when it used no CPU for ``idle_s`` or ran past ``timeout``."""
    deadline, watch = time.monotonic() + timeout, Progress((proc.pid,), idle_s)
    while True:
        try:
            return proc.wait(timeout=min(0.25, max(0.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            pass
        if watch.stalled():
            raise Hung(argv_of(proc), idle_s)
        if time.monotonic() >= deadline:
            raise subprocess.TimeoutExpired(argv_of(proc), timeout)


def argv_of(proc: subprocess.Popen[Any]) -> list[str]:
    """The argv a program was started with (pmuprof starts programs with a list of str)."""
    return list(cast(Sequence[str], proc.args))


def _stat(pid: int | str) -> list[bytes] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None


def cpu_ticks(pid: int | str, children: bool = True) -> int | None:
    """utime + stime of a process (all its threads) and, with ``children``, of its reaped children (clock
    ticks); None once it is gone."""
    fields = _stat(pid)
    try:
        return sum(int(f) for f in fields[11 : 15 if children else 13]) if fields else None
    except ValueError:
        return None


def group_ticks(pgid: int) -> int:
    """CPU ticks of every process in process group ``pgid`` (a wrapper script's children count too)."""
    total = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            fields = _stat(entry.name)
            if fields and len(fields) > 14 and fields[2] == str(pgid).encode():
                total += sum(int(f) for f in fields[11:15] if f.isdigit())
    return total


class Progress:
    """Tells a working program from a hung one: hung when its process group (or ``pids``; ``own``: their
    own threads only, not the children they fork and reap) used no CPU for ``idle_s`` seconds, and
    nothing else said it moved (``moved()``). Checked at most once a second."""

    def __init__(self, pids: Sequence[int], idle_s: float, group: bool = True, own: bool = False) -> None:
        self.pids, self.idle_s, self.group, self.own = tuple(pids), idle_s, group and not own, own
        self.last, self.since, self.checked = self._ticks(), time.monotonic(), 0.0

    def _ticks(self) -> int:
        if self.group:
            return sum(group_ticks(p) for p in self.pids)
        return sum(t for t in (cpu_ticks(p, children=not self.own) for p in self.pids) if t is not None)

    def moved(self) -> None:
        """Progress seen another way (the program's output grew)."""
        self.since = time.monotonic()

    def stalled(self) -> bool:
        now = time.monotonic()
        if now - self.checked < 1.0:
            return False
        self.checked, ticks = now, self._ticks()
        if ticks != self.last:
            self.last, self.since = ticks, now
        return now - self.since >= self.idle_s


class Watchdog(threading.Thread):
    """Kills ``procs`` when together they used no CPU for ``idle_s`` (hung) or ran past ``max_s``;
    ``fired`` then says why. For pipelines whose output is read as it comes (perf script | fold)."""

    def __init__(self, procs: Sequence[subprocess.Popen], idle_s: float, max_s: float) -> None:
        super().__init__(daemon=True, name="pmuprof-watchdog")
        self.procs, self.idle_s, self.max_s = tuple(procs), idle_s, max_s
        self.fired = ""
        self._done = threading.Event()

    def run(self) -> None:
        watch = Progress([p.pid for p in self.procs], self.idle_s, group=False)
        deadline = time.monotonic() + self.max_s
        while not self._done.wait(1.0):
            if watch.stalled():
                self.fired = f"used no CPU for {self.idle_s:.0f} s"
            elif time.monotonic() > deadline:
                self.fired = f"did not finish within {self.max_s:.0f} s"
            if self.fired:
                for proc in self.procs:
                    if proc.poll() is None:
                        proc.kill()
                return

    def __enter__(self) -> Watchdog:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._done.set()
        self.join()


def held_open(paths: Sequence[str], comms: Sequence[str] = ("perf",)) -> bool | None:
    """Whether a live process whose name starts with one of ``comms`` holds one of ``paths`` open (None: /proc
    does not show other processes' files here). Only those processes' descriptors are read."""
    wanted, seen_any = set(paths), False
    try:
        entries = list(os.scandir("/proc"))
    except OSError:
        return None
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/comm", encoding="utf-8", errors="replace") as fh:
                if not fh.read().startswith(tuple(comms)):
                    continue
            fds = os.listdir(f"/proc/{entry.name}/fd")
        except OSError:
            continue
        seen_any = True
        for fd in fds:
            try:
                if os.readlink(f"/proc/{entry.name}/fd/{fd}") in wanted:
                    return True
            except OSError:
                continue
    return False if seen_any or os.geteuid() == 0 else None

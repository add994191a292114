"""Run perf record/stat for a bounded time: progress, Ctrl-C keeps data, no orphaned perf, clear errors."""

from __future__ import annotations

import ctypes
import os
import select
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from ..errors import PerfError, TargetError
from ..model import rundir
from .target.process import is_alive

Progress = Callable[[float, float, int], None]  # (elapsed_s, duration_s, perf.data bytes)
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child: if pmuprof dies (even SIGKILL), perf gets SIGINT and writes what it has."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGINT)
    except (OSError, AttributeError):
        pass


def spawn(argv: Sequence[str], stderr_path: Path) -> subprocess.Popen:
    """Start perf in its own session (a terminal Ctrl-C reaches pmuprof, which stops perf cleanly)."""
    try:
        return subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=open(stderr_path, "wb"), start_new_session=True,
                                preexec_fn=_die_with_parent)
    except FileNotFoundError as err:
        raise PerfError(f"cannot run {argv[0]}: not found", "apt-get install linux-perf (or set PMUPROF_PERF)") from err
    except PermissionError as err:
        raise PerfError(f"cannot run {argv[0]}: permission denied", "check the perf binary's permissions") from err


def classify_perf_error(stderr: str, paranoid: int | None) -> PerfError | TargetError:
    text = stderr.lower()
    if "no such process" in text or "couldn't open /proc" in text:
        return TargetError("the target process vanished before perf could attach", "check the pid and retry")
    if "permission" in text or "perf_event_paranoid" in text or "access to performance monitoring" in text:
        return PerfError(f"perf is not allowed to profile here (kernel.perf_event_paranoid={paranoid})",
                         "run as root, or `sysctl kernel.perf_event_paranoid=-1`, or grant CAP_PERFMON")
    if "event syntax error" in text or "not supported" in text or "unknown tracepoint" in text:
        return PerfError("perf rejected the event: " + _first_line(stderr),
                         "run `pmuprof doctor`; on hosts without a PMU use --event cpu-clock")
    if "no space left" in text:
        return PerfError("perf ran out of disk space", "free space or use -o on a larger filesystem")
    return PerfError("perf failed: " + (_first_line(stderr) or "no message"), "run `pmuprof doctor` for the cause")


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            return line.strip()[:300]
    return ""


@dataclass
class Outcome:
    elapsed_s: float = 0.0
    interrupted: bool = False
    stopped_by: str = ""  # SIGINT, SIGTERM, SIGHUP, target-exit, or "" (the duration ran out)
    target_exited: list[int] = field(default_factory=list)
    returncodes: dict[str, int | None] = field(default_factory=dict)
    stderr: dict[str, str] = field(default_factory=dict)


def _signal(proc: subprocess.Popen, sig: int) -> None:
    try:
        if proc.poll() is None:
            os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


def stop(proc: subprocess.Popen, grace_s: float = 60.0) -> int | None:
    """SIGINT (perf writes its file), then SIGTERM, then SIGKILL: never leave perf running."""
    for sig, wait in ((signal.SIGINT, grace_s), (signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        if proc.poll() is not None:
            break
        try:
            os.killpg(proc.pid, sig)  # perf runs in its own session: its group is just perf (and children)
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        except ProcessLookupError:
            break
    return proc.poll()


class Control:
    """perf's control FIFOs: perf starts with events disabled; the capture clock starts at its 'ack'.

    A loaded host can take seconds to start `perf record -a` (it synthesizes every process's
    mmaps), so timing from spawn would shorten the window that was asked for.
    """

    def __init__(self, directory: Path) -> None:
        self.ctl, self.ack = (directory / name for name in rundir.CONTROL_FIFOS)
        for fifo in (self.ctl, self.ack):
            fifo.unlink(missing_ok=True)
            os.mkfifo(fifo, 0o600)
        self._ack_fd = os.open(self.ack, os.O_RDONLY | os.O_NONBLOCK)  # perf's write-open must not block

    def argv(self) -> list[str]:
        return ["-D", "-1", "--control", f"fifo:{self.ctl},{self.ack}"]

    def enable(self, proc: subprocess.Popen, timeout: float = 120.0) -> bool:
        """Send 'enable' once perf listens and wait for its ack; False if perf exited first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                fd = os.open(self.ctl, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # ENXIO: perf has not opened its end yet
                time.sleep(0.05)
                continue
            try:
                os.write(fd, b"enable\n")
            finally:
                os.close(fd)
            return self._wait_ack(proc, deadline)
        return False

    def _wait_ack(self, proc: subprocess.Popen, deadline: float) -> bool:
        while time.monotonic() < deadline and proc.poll() is None:
            ready, _, _ = select.select([self._ack_fd], [], [], 0.2)
            if ready and b"ack" in os.read(self._ack_fd, 64):
                return True
        return False

    def close(self) -> None:
        os.close(self._ack_fd)
        for fifo in (self.ctl, self.ack):
            fifo.unlink(missing_ok=True)


def run_bounded(procs: dict[str, tuple[Sequence[str], Path]], duration: float, pids: Sequence[int],
                paranoid: int | None, progress: Progress | None = None, data_path: Path | None = None,
                control: Control | None = None) -> Outcome:
    """Run the named perf commands together for ``duration`` seconds of recording, then stop them all."""
    out = Outcome()
    started: dict[str, subprocess.Popen] = {}
    t0 = time.monotonic()
    try:
        for name, (argv, err_path) in procs.items():
            started[name] = spawn(argv, err_path)
        if control is not None and control.enable(started["record"]):
            t0 = time.monotonic()
        _watch(started, procs, duration, pids, paranoid, progress, data_path, out, t0)
    except KeyboardInterrupt:
        out.interrupted, out.stopped_by = True, "SIGINT"
    finally:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not lose the data
        try:
            out.elapsed_s = round(time.monotonic() - t0, 3)
            for proc in started.values():  # signal all first: their shutdowns overlap
                _signal(proc, signal.SIGINT)
            for name, proc in started.items():
                out.returncodes[name] = stop(proc)
                out.stderr[name] = procs[name][1].read_text(errors="replace") if procs[name][1].exists() else ""
        finally:
            signal.signal(signal.SIGINT, previous)
            if control is not None:
                control.close()
    return out


def _watch(started, procs, duration, pids, paranoid, progress, data_path, out, t0) -> None:
    while True:
        elapsed = time.monotonic() - t0
        for name, proc in started.items():
            if name == "record" and proc.poll() is not None:  # perf stat failing is not fatal
                err = procs[name][1].read_text(errors="replace")
                if proc.returncode != 0 and not [p for p in pids if not is_alive(p)]:
                    raise classify_perf_error(err, paranoid)
                out.target_exited = [p for p in pids if not is_alive(p)]
                return
        gone = [p for p in pids if not is_alive(p)]
        if gone:
            out.target_exited = gone
            return
        if elapsed >= duration:
            return
        if progress:
            size = data_path.stat().st_size if data_path and data_path.exists() else 0
            progress(elapsed, duration, size)
        time.sleep(min(0.5, max(0.05, duration - elapsed)))

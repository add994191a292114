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
from collections.abc import Callable, Mapping, Sequence

from .. import rundir_create, signals
from . import diskroom
from ..errors import PerfError, ResourceError, TargetError
from ..model import rundir
from ..packages import apt_install
from ..tools.proc import Progress as CpuProgress, stall_s
from .proc.process import is_alive

Progress = Callable[[float, float, int], None]  # (elapsed_s, duration_s, perf.data bytes)
_PR_SET_PDEATHSIG = 1


def die_with_parent() -> Callable[[], None]:
    """A preexec_fn: if its parent dies (even by SIGKILL), the child gets SIGINT (prctl PR_SET_PDEATHSIG): perf
    writes what it has, a pmuprof stops and writes its run. prctl is looked up here, in the parent: between fork
    and exec the child only calls it (a lookup there could wait on a lock another thread held at the fork)."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return lambda: None
    return lambda: prctl(_PR_SET_PDEATHSIG, signal.SIGINT)


def spawn(argv: Sequence[str], stderr_path: Path, pass_fds: Sequence[int] = ()) -> subprocess.Popen:
    """Start perf in its own session (a terminal Ctrl-C reaches pmuprof, which stops perf cleanly); its stderr
    goes to ``stderr_path`` through a descriptor pmuprof opened (no link followed); ``pass_fds`` stay open."""
    err_fd = rundir_create.open_stream(stderr_path)
    try:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err_fd,
            start_new_session=True,
            preexec_fn=die_with_parent(),
            pass_fds=tuple(pass_fds),
        )
    except FileNotFoundError as err:
        raise PerfError(f"cannot run {argv[0]}: not found", f"{apt_install('perf')} (or set PMUPROF_PERF)") from err
    except PermissionError as err:
        raise PerfError(f"cannot run {argv[0]}: permission denied", "check the perf binary's permissions") from err
    finally:
        os.close(err_fd)


def classify_perf_error(stderr: str, paranoid: int | None) -> PerfError | TargetError | ResourceError:
    text = stderr.lower()
    if "no such process" in text or "couldn't open /proc" in text:
        return TargetError("the target process vanished before perf could attach", "check the pid and retry")
    if "permission" in text or "perf_event_paranoid" in text or "access to performance monitoring" in text:
        return PerfError(
            f"perf is not allowed to profile here (kernel.perf_event_paranoid={paranoid})",
            "run as root, or `sysctl kernel.perf_event_paranoid=-1`, or grant CAP_PERFMON",
        )
    if "event syntax error" in text or "not supported" in text or "unknown tracepoint" in text:
        return PerfError(
            "perf rejected the event: " + _first_line(stderr),
            "run `pmuprof doctor`; on hosts without a PMU use --event cpu-clock",
        )
    if "no space left" in text or "disk quota" in text:
        return ResourceError("perf ran out of disk space", "free space or use -o on a larger filesystem")
    if "branch stack" in text or "lbr" in text:
        return PerfError(
            "perf cannot sample with --call-graph lbr here: " + _first_line(stderr),
            "LBR needs an Intel CPU exposing it (bare metal, or a VM with LBR passed through); "
            "use --call-graph fp or dwarf",
        )
    return PerfError("perf failed: " + (_first_line(stderr) or "no message"), "run `pmuprof doctor` for the cause")


_NOISE = ("#", "events disabled", "events enabled", "warning:", "[ perf record:")


def _first_line(text: str) -> str:
    """perf's first line that says something ("Error:" alone is joined with the line after it)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().lower().startswith(_NOISE)]
    for i, line in enumerate(lines):
        if line.rstrip(":").lower() == "error" and i + 1 < len(lines):
            return f"{line} {lines[i + 1]}"[:300]
        return line[:300]
    return ""


@dataclass
class Outcome:
    elapsed_s: float = 0.0
    interrupted: bool = False
    stopped_by: str = ""  # SIGINT, SIGTERM, SIGHUP, disk, or "" (the duration ran out)
    disk_low: str = ""  # why the free-space watcher stopped perf
    perf_killed: str = ""  # the signal that killed perf record (its data is kept and reported)
    again: int = 0  # a further stop signal that arrived while perf was stopping (the caller stops after run.json)
    window_start_s: float = 0.0  # CLOCK_MONOTONIC when the window started (perf's enable acknowledged)
    target_exited: list[int] = field(default_factory=list)
    returncodes: dict[str, int | None] = field(default_factory=dict)
    stderr: dict[str, str] = field(default_factory=dict)


def _signal(proc: subprocess.Popen, sig: int) -> None:
    try:
        if proc.poll() is None:
            os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


STOP_IDLE_S = 15.0  # perf that used no CPU for this long after SIGINT is hung, not finishing its file
STOP_MAX_S = 600.0  # and perf still busy after this long is stopped anyway
KILL_GRACE_S = 5.0  # after SIGTERM: then SIGKILL


def _size(path: Path | None) -> int:
    try:
        return path.stat().st_size if path is not None else -1
    except OSError:
        return -1


def _wait_working(proc: subprocess.Popen, idle_s: float, max_s: float, output: Path | None = None) -> None:
    """Wait while perf works on its file: ``output`` grows (buffers flushed, build-ids written) or perf
    itself uses CPU (reading DSOs for build-ids). A child's CPU is not perf's work: a perf that forks
    and ignores signals is given up on after ``idle_s``, not after ``max_s``."""
    watch, deadline, size = CpuProgress((proc.pid,), idle_s, own=True), time.monotonic() + max_s, _size(output)
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            proc.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            pass
        if _size(output) != size:
            size = _size(output)
            watch.moved()
        if watch.stalled():
            return


def stop(
    proc: subprocess.Popen, idle_s: float = STOP_IDLE_S, max_s: float = STOP_MAX_S, output: Path | None = None
) -> int | None:
    """SIGINT (perf writes ``output``), then SIGTERM, then SIGKILL after KILL_GRACE_S: never leave perf
    (or anything it started: its session is signalled) running."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        if proc.poll() is not None:
            break
        try:
            os.killpg(proc.pid, sig)  # perf runs in its own session: its group is just perf (and children)
        except ProcessLookupError:
            break
        if sig == signal.SIGINT:
            _wait_working(proc, min(idle_s, stall_s()), max_s, output)
        else:
            try:
                proc.wait(timeout=KILL_GRACE_S)
            except subprocess.TimeoutExpired:
                continue
    if proc.poll() is not None:
        _signal_group(proc.pid, signal.SIGKILL)  # what it forked and left in its group goes too
    return proc.poll()


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


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

    def enable(self, proc: subprocess.Popen, timeout: float = 60.0) -> bool:
        """Send 'enable' once perf listens and wait for its ack; False if perf exited first."""
        deadline, watch = time.monotonic() + timeout, CpuProgress((proc.pid,), stall_s(), own=True)
        while time.monotonic() < deadline and proc.poll() is None and not watch.stalled():
            try:
                fd = os.open(self.ctl, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # ENXIO: perf has not opened its end yet
                time.sleep(0.05)
                continue
            try:
                os.write(fd, b"enable\n")
            finally:
                os.close(fd)
            return self._wait_ack(proc, deadline, watch)
        return False

    def _wait_ack(self, proc: subprocess.Popen, deadline: float, watch: CpuProgress) -> bool:
        while time.monotonic() < deadline and proc.poll() is None and not watch.stalled():
            ready, _, _ = select.select([self._ack_fd], [], [], 0.2)
            if ready and b"ack" in os.read(self._ack_fd, 64):
                return True
        return False

    def close(self) -> None:
        os.close(self._ack_fd)
        for fifo in (self.ctl, self.ack):
            fifo.unlink(missing_ok=True)


ENABLE_TIMEOUT_S = 600.0  # perf record -a may take long to start on a loaded host: only a hang detector (a
# perf that uses no CPU for stall_s() is hung long before)
READY = b": ready\n"  # what a starter (pmuprof-offcpu --start-on-usr1) writes on stderr once it can count
STARTER_HANG_S = 600.0  # a starter neither ready nor using CPU for stall_s() is hung; this long in all is too


def _tail(path: Path, size: int = 4096) -> bytes:
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, fh.seek(0, os.SEEK_END) - size))
            return fh.read()
    except OSError:
        return b""


def wait_ready(started: dict[str, subprocess.Popen], starters: Sequence[str], err_paths: dict[str, Path]) -> None:
    """Until every starter says it is ready (the tracer attached: loading BPF can take seconds on a loaded
    host) or has exited: perf's window opens after that, so the starters count all of it. A hung starter
    (no CPU for stall_s(), or STARTER_HANG_S) is not waited for: it then reports what it missed itself."""
    for name in starters:
        proc, err = started[name], err_paths[name]
        deadline, watch = time.monotonic() + STARTER_HANG_S, CpuProgress((proc.pid,), stall_s(), own=True)
        while READY not in _tail(err) and proc.poll() is None:
            if time.monotonic() > deadline or watch.stalled():
                break
            time.sleep(0.02)


@dataclass(frozen=True)
class DiskGuard:
    """Stop perf before the filesystem of ``path`` has less than ``reserve`` bytes free."""

    path: Path
    reserve: int
    room: bool = False  # ``path`` holds a room (diskroom): perf's last write on a full disk gets it

    def low(self) -> str:
        """Why perf must stop now, or ""."""
        try:
            st = os.statvfs(self.path)
        except OSError:
            return ""
        free = st.f_bavail * st.f_frsize
        if free >= self.reserve:
            return ""
        return (
            f"{free / 2**20:.0f} MiB left on the filesystem of {self.path}, below the "
            f"{self.reserve / 2**20:.0f} MiB pmuprof keeps free"
        )


class Bounded:
    """The named perf commands (and the programs sources run inside perf's window) for ``duration`` seconds
    of recording: start() spawns them and starts the window, wait() watches it, stop() ends it (always: it
    is what cleanup calls too). ``starters`` (the off-CPU tracer) count nothing until SIGUSR1, sent when
    perf's window starts, and are stopped with it: their window is perf's. ``pass_fds``: descriptors a
    command writes through (perf stat's --log-fd), by name.

    SIGINT, SIGTERM and SIGHUP (pmuprof.signals) end the window early like the clock does; a signal
    that arrives while perf is being stopped is noted, never lost, and never cuts the stop short.
    """

    def __init__(
        self,
        procs: Mapping[str, tuple[Sequence[str], Path]],
        pids: Sequence[int],
        paranoid: int | None,
        data_path: Path | None = None,
        control: Control | None = None,
        disk: DiskGuard | None = None,
        starters: Sequence[str] = (),
        at_end: Sequence[Callable[[], None]] = (),
        pass_fds: Mapping[str, Sequence[int]] | None = None,
    ) -> None:
        self.procs, self.pids, self.paranoid, self.data_path = procs, pids, paranoid, data_path
        self.control, self.disk, self.starters, self.at_end = control, disk, starters, at_end
        self.pass_fds = pass_fds or {}
        self.out = Outcome()
        self.started: dict[str, subprocess.Popen] = {}
        self.t0 = time.monotonic()
        self.ended = False
        self.stopped = False
        self._pending: list[int] = []  # stop signals that came while the window was being ended

    def start(self) -> None:
        """Spawn every command; the window starts when perf acknowledges 'enable' (or now, without control)."""
        try:
            for name, (argv, err_path) in self.procs.items():
                self.started[name] = spawn(argv, err_path, self.pass_fds.get(name, ()))
            self.t0 = time.monotonic()
            if self.control is not None:
                wait_ready(self.started, self.starters, {name: err for name, (_, err) in self.procs.items()})
                if self.control.enable(self.started["record"], ENABLE_TIMEOUT_S):
                    self.t0 = time.monotonic()
                    for name in self.starters:
                        _signal(self.started[name], signal.SIGUSR1)
                elif self.started["record"].poll() is None:
                    raise PerfError(
                        "perf record did not start recording (no answer on its control FIFO within "
                        f"{ENABLE_TIMEOUT_S:.0f} s, or no CPU used for {stall_s():.0f} s)",
                        "check the perf binary (PMUPROF_PERF) and `pmuprof doctor`",
                    )
        except signals.STOPS as err:
            self.out.interrupted, self.out.stopped_by = True, signals.name_of(err)

    def wait(self, duration: float, progress: Progress | None = None) -> None:
        """Until the window ends: the clock, perf exiting, a target gone, the disk low, or a stop signal."""
        if self.out.interrupted:
            return
        try:
            _watch(
                self.started, self.procs, duration, self.pids, self.paranoid, progress, self.data_path, self.out,
                self.t0, self.disk,
            )  # fmt: skip
        except signals.STOPS as err:
            self.out.interrupted, self.out.stopped_by = True, signals.name_of(err)

    def end(self) -> Outcome:
        """End the window: what must be read at its end is read, and every command is told to stop (SIGINT),
        without waiting for them (perf record then writes its buffers and the build-ids of what it sampled, a
        second under load); ``out`` says when the window started and how long it ran. Once; stop() waits."""
        if self.ended:
            return self.out
        self.ended = True
        out, disk = self.out, self.disk
        with signals.held() as pending:
            if self.started:  # the window ran: what must be read at its end, before anything stops
                _call_each(self.at_end)
            out.window_start_s = self.t0
            out.elapsed_s = round(time.monotonic() - self.t0, 3)
            if disk is not None and disk.room and (out.stopped_by == "disk" or disk.low()):
                diskroom.shrink(disk.path)  # perf still writes its buffers when it stops
            for proc in self.started.values():  # signal all first: their shutdowns overlap
                _signal(proc, signal.SIGINT)
        self._pending = list(pending)
        return out

    def stop(self) -> Outcome:
        """End the window if end() has not, wait for everything started to stop (perf writes its file) and
        say how the window went; once."""
        if self.stopped:
            return self.out
        self.end()
        self.stopped = True
        out = self.out
        with signals.held() as pending:
            pending[:0] = self._pending
            for name, proc in self.started.items():
                out.returncodes[name] = stop(proc, output=self.data_path if name == "record" else None)
                log = self.procs[name][1]
                out.stderr[name] = log.read_text(errors="replace") if log.exists() else ""
            if self.control is not None:
                self.control.close()
        if pending and not out.interrupted:
            out.interrupted, out.stopped_by = True, signal.Signals(pending.pop(0)).name
        out.again = pending[0] if pending else 0
        return out


def _call_each(hooks: Sequence[Callable[[], None]]) -> None:
    for hook in hooks:
        try:
            hook()
        except Exception:  # a hook's failure must not keep perf running; its source says what it lacks
            pass


def _record_exited(proc: subprocess.Popen, err_path: Path, pids, paranoid, out: Outcome) -> None:
    """perf record stopped by itself: the targets are gone (fine), it hit --max-size (fine), something
    killed it (what it wrote is kept and reported, then exit 5), or it failed (exit 5 now)."""
    out.target_exited = [p for p in pids if not is_alive(p)]
    if proc.returncode and proc.returncode < 0:
        out.perf_killed = _signal_name(-proc.returncode)
    elif proc.returncode and not out.target_exited:
        raise classify_perf_error(err_path.read_text(errors="replace"), paranoid)


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _watch(started, procs, duration, pids, paranoid, progress, data_path, out, t0, disk) -> None:
    while True:
        elapsed = time.monotonic() - t0
        record = started["record"]
        if record.poll() is not None:  # perf stat failing is not fatal
            _record_exited(record, procs["record"][1], pids, paranoid, out)
            return
        gone = [p for p in pids if not is_alive(p)]
        if gone:
            out.target_exited = gone
            return
        if elapsed >= duration:
            return
        low = disk.low() if disk is not None else ""
        if low:
            out.stopped_by, out.disk_low = "disk", low
            return
        if progress:
            size = data_path.stat().st_size if data_path and data_path.exists() else 0
            progress(elapsed, duration, size)
        time.sleep(min(0.5, max(0.05, duration - elapsed)))

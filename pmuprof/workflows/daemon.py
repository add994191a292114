"""Run in the background like pt-stalk --daemonize: detach, log to a file, hold a locked pid file."""

from __future__ import annotations

import datetime as _dt
import fcntl
import os
import signal
import sys
from pathlib import Path
from collections.abc import Callable

from .. import signals
from ..errors import UsageError


def _held_by(pid_file: Path) -> int | None:
    """The pid of a live process holding ``pid_file``'s lock, else None (a stale file is fine)."""
    try:
        fd = os.open(pid_file, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return None
    except OSError:
        text = os.read(fd, 32).decode("ascii", "replace").strip()
        return int(text) if text.isdigit() else -1
    finally:
        os.close(fd)


def _lock(pid_file: Path) -> int:
    """Open and lock the pid file for the daemon's lifetime; write our pid into it."""
    fd = os.open(pid_file, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise UsageError(
            f"{pid_file} is locked: another pmuprof watch is running",
            "stop it (kill $(cat PIDFILE)) or pass another --pid-file",
        ) from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    os.fsync(fd)
    return fd


def _on_sigterm(signum: int, _frame: object) -> None:
    raise signals.StopSignal(signum)  # the watch loop stops perf cleanly, writes what it captured, logs SIGTERM


def daemonize(pid_file: Path | None, log_file: Path) -> int | None:
    """Fork into the background. Returns the daemon's pid in the parent (after the daemon has locked
    its pid file) and None in the daemon, whose stdin is /dev/null and stdout/stderr the log file.
    Refuses (UsageError, in the parent) when a live daemon holds the pid file."""
    if pid_file is not None:
        holder = _held_by(pid_file)
        if holder is not None:
            raise UsageError(
                f"{pid_file}: pmuprof watch already runs as pid {holder}", "stop it first, or pass another --pid-file"
            )
    log_fd = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640)  # fails here, in the parent
    read_end, write_end = os.pipe()
    if os.fork():
        os.close(write_end)
        os.close(log_fd)
        with os.fdopen(read_end, "rb") as pipe:
            answer = pipe.read().decode("utf-8", "replace").strip()
        if not answer.isdigit():
            raise UsageError(f"the background watch did not start: {answer or 'no answer'}", f"see {log_file}")
        return int(answer)
    os.close(read_end)
    os.setsid()
    if os.fork():
        os._exit(0)  # the session leader exits: the daemon can never regain a terminal
    try:
        if pid_file is not None:
            _lock(pid_file)
    except UsageError as err:
        os.write(write_end, str(err).encode())
        os._exit(2)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.close(log_fd)
    os.umask(0o022)
    signal.signal(signal.SIGTERM, _on_sigterm)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    os.write(write_end, str(os.getpid()).encode())
    os.close(write_end)
    return None


def release(pid_file: Path | None) -> None:
    """Remove the pid file on the way out (only ours: it still names this process)."""
    if pid_file is None:
        return
    try:
        if pid_file.read_text().strip() == str(os.getpid()):
            pid_file.unlink()
    except OSError:
        pass


def stamped(log: Callable[[str], None]) -> Callable[[str], None]:
    """A log function that starts each line with the local time (a daemon's log is read later)."""

    def write(message: str) -> None:
        log(f"{_dt.datetime.now().astimezone().isoformat(timespec='seconds')} {message}")

    return write

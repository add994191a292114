"""Stop signals (SIGINT, SIGTERM, SIGHUP) as one exception, so each stops a capture the way Ctrl-C does."""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class StopSignal(BaseException):
    """SIGINT, SIGTERM or SIGHUP arrived; like KeyboardInterrupt, not an Exception (nothing swallows it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


STOPS = (KeyboardInterrupt, StopSignal)  # what `except` clauses catch: Ctrl-C outside the CLI is KeyboardInterrupt


def name_of(err: BaseException) -> str:
    return err.name if isinstance(err, StopSignal) else "SIGINT"


def exit_code(stopped_by: str) -> int:
    """The exit status for a run stopped by ``stopped_by`` (a signal name): 128 + its number; 130 otherwise."""
    try:
        return 128 + int(signal.Signals[stopped_by])
    except KeyError:
        return 130


def _raise(signum: int, _frame: object) -> None:
    raise StopSignal(signum)


@contextlib.contextmanager
def installed() -> Iterator[None]:
    """Inside: SIGINT, SIGTERM and SIGHUP raise StopSignal in the main thread (the CLI runs in here);
    the previous handlers come back on the way out (callers such as tests keep theirs)."""
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for signum in STOP_SIGNALS:
            if signal.getsignal(signum) is not signal.SIG_IGN:  # nohup's SIGHUP stays ignored
                previous[signum] = signal.signal(signum, _raise)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def held() -> Iterator[list[int]]:
    """Inside: stop signals are only noted (in the yielded list), so a cleanup cannot be cut short.
    The caller decides what a noted signal means; handlers are restored on the way out."""
    pending: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield pending
        return
    previous = {}
    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            previous[signum] = signal.signal(signum, lambda n, _f: pending.append(n))
    try:
        yield pending
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Inside: stop signals wait; the first one is raised as StopSignal once the block has finished."""
    with held() as pending:
        yield
    if pending:
        raise StopSignal(pending[0])

"""Stop signals (SIGINT, SIGTERM, SIGHUP) as one exception, so each stops a capture the way Ctrl-C does."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# Stop signals within this long of the one taken are the same request: timeout(1) sends SIGTERM to its
# child, then to its process group, 0.2 ms apart, and a service manager may signal the process and its group.
BURST_S = 1.0


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


class _Burst:
    """When the last stop request was taken (monotonic s): process-wide, like the signal handlers themselves."""

    taken: float | None = None


def _new_request() -> bool:
    """True for a stop signal that is a request of its own; False for one of the burst of the last one."""
    now = time.monotonic()
    if _Burst.taken is not None and now - _Burst.taken < BURST_S:
        return False
    _Burst.taken = now
    return True


def _raise(signum: int, _frame: object) -> None:
    if _new_request():
        raise StopSignal(signum)


def _note(pending: list[int]):
    def handler(signum: int, _frame: object) -> None:
        if _new_request():
            pending.append(signum)

    return handler


@contextlib.contextmanager
def installed() -> Iterator[None]:
    """Inside: SIGINT, SIGTERM and SIGHUP raise StopSignal in the main thread (the CLI runs in here), once
    per burst (BURST_S); the previous handlers come back on the way out (callers such as tests keep theirs)."""
    previous = {}
    _Burst.taken = None  # a new run: no earlier request to be part of
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
    """Inside: stop signals are only noted (in the yielded list, once per burst, BURST_S), so a cleanup cannot
    be cut short. The caller decides what a noted signal means; handlers are restored on the way out."""
    pending: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield pending
        return
    previous = {}
    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            previous[signum] = signal.signal(signum, _note(pending))
    try:
        yield pending
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _first_noted(pending: list[int], on_first: Callable[[str], None]):
    def handler(signum: int, _frame: object) -> None:
        if not _new_request():
            return
        if pending:
            raise StopSignal(signum)
        pending.append(signum)
        on_first(signal.Signals(signum).name)

    return handler


@contextlib.contextmanager
def first_noted(on_first: Callable[[str], None] = lambda _name: None) -> Iterator[list[int]]:
    """Inside: the first stop request is only noted (in the yielded list, and told to ``on_first``) and the
    block runs to its end; a further request (after BURST_S) raises StopSignal as usual. For work that is
    worth more finished than stopped: the report of a capture whose perf has already stopped."""
    pending: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield pending
        return
    previous = {}
    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            previous[signum] = signal.signal(signum, _first_noted(pending, on_first))
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

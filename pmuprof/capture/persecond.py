"""The per-second source: one thread reading a few numbers once a second on the capture's clock.

Every per-second source (host load, the processlist, watch's trigger polls, ...) is a ``PerSecond``:
it names its measures and reads; this base runs the thread, keeps the clock and gives the series.
Polls aim at the middle (``phase``) of each second of CLOCK_MONOTONIC (perf's sample clock here,
tools/perf/argv.SAMPLE_CLOCK) and each is stamped with the whole second at its midpoint, so a poll
that takes under half a second lands in the second it was meant for; a second polled twice keeps the
later poll. Memory is one value per measure and second, bounded by MAX_POLLS.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, replace
from typing import Any
from collections.abc import Callable, Mapping

from ..model.series import Series
from .lifecycle import Context, Part, Source

INTERVAL_S = 1.0
PHASE_S = 0.5  # polls start half a second into a second of the clock
MAX_POLLS = 7200  # two hours of polls (captures are at most one): a source that reaches it stops polling
JOIN_S = 5.0  # how long stop waits for a poll in progress (a slow query) before it gives up on the thread
Wait = Callable[[float], bool]  # sleeps up to that long; True once the source is stopped (Event.wait)


@dataclass(frozen=True)
class Measure:
    """One series a source keeps: its name ("<source>.<measure>"), unit, words, and whether the strip shows it."""

    name: str
    unit: str = ""
    about: str = ""
    show: bool = False


class PerSecond(Source):
    """A source that polls once a second (``interval``) in a thread of its own. Subclasses set ``name`` and
    ``measures`` and implement ``read`` (one reading) and ``keep`` (its values by measure name, and anything
    the source writes per poll); ``open`` and ``close`` run in the thread around the polls, ``finish`` adds
    what the source says when it stops (run.json fields, notes). ``final``: one more reading when it stops,
    so its window ends where perf's does."""

    with_window = True
    measures: tuple[Measure, ...] = ()
    interval = INTERVAL_S
    final = False
    join_s = JOIN_S
    phase = PHASE_S  # where in each second of the clock the polls aim (two sources can keep out of each other's way)

    def __init__(self, clock: Callable[[], float] = time.monotonic, wait: Wait | None = None) -> None:
        self.clock = clock
        self.polls = 0
        self.error = ""  # why it stopped early or never polled (no password in it: see ``why``)
        self._done = threading.Event()
        self._measuring = threading.Event()  # its first poll has ended (or it never will): ready()
        self._wait: Wait = wait or self._done.wait
        self._lock = threading.Lock()
        self._values: dict[int, Mapping[str, float | None]] = {}
        self._thread: threading.Thread | None = None

    # what a source implements
    def open(self, ctx: Context) -> None:
        """Before the first poll, in the thread (connect, open a file); raising: the source polls nothing."""

    def read(self) -> Any:
        raise NotImplementedError

    def keep(self, second: int, reading: Any) -> Mapping[str, float | None]:
        raise NotImplementedError

    def last(self) -> None:
        """In the thread, once it is told to stop (not after a failed poll), before ``close``: a source's last
        reading while its connection is still open (one more poll, an end-of-window snapshot)."""

    def close(self) -> None:
        """After the last poll, in the thread; never raises."""

    def finish(self, ctx: Context) -> Part:
        """Its part besides the series (fields, notes, files)."""
        return Part(self.name)

    def why(self, err: BaseException) -> str:
        """An error in words for run.json (a source holding secrets scrubs them here)."""
        return str(err) or type(err).__name__

    # the base
    def start(self, ctx: Context) -> None:
        self._thread = threading.Thread(target=self._run, args=(ctx,), daemon=True, name=f"pmuprof-{self.name}")
        self._thread.start()

    def stop(self, ctx: Context) -> Part:
        self._halt()
        if self.final and (self._thread is None or not self._thread.is_alive()):
            try:
                self._poll()
            except Exception as err:  # noqa: BLE001 - the series so far are kept
                self.error = self.error or self.why(err)
        part = self.finish(ctx)
        return replace(part, series=part.series + self.series(), why_not=part.why_not or self._why_not())

    def cleanup(self) -> None:
        self._halt()

    def series(self) -> tuple[Series, ...]:
        """Its measures as series, in the order it names them."""
        with self._lock:
            rows = dict(self._values)
        return tuple(
            Series.of(m.name, self.name, m.unit, m.about, m.show, {s: _number(v.get(m.name)) for s, v in rows.items()})
            for m in self.measures
        )

    def _why_not(self) -> str:
        return "" if self.polls else (self.error or "no poll finished")

    def _halt(self) -> None:
        """Stop polling and wait for a poll in progress, once (a stuck one is waited for once, not again)."""
        if self._done.is_set():
            return
        self._done.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(self.join_s)

    def ready(self, ctx: Context, timeout: float) -> bool:
        return self._thread is None or self._measuring.wait(timeout)

    def _run(self, ctx: Context) -> None:
        try:
            self.open(ctx)
        except Exception as err:  # noqa: BLE001 - the capture goes on without this source
            self.error = self.why(err)
            self._measuring.set()
            return
        try:
            while not self._done.is_set() and self.polls < MAX_POLLS:
                t0, t1 = self._poll()
                self._measuring.set()
                if self._wait(max(0.0, self._next(t0, t1) - self.clock())):
                    break
            if self.polls >= MAX_POLLS:
                self.error = f"stopped after {MAX_POLLS} polls"
            self.last()
        except Exception as err:  # noqa: BLE001
            self.error = self.why(err)
        finally:
            self._measuring.set()
            self.close()

    def _poll(self) -> tuple[float, float]:
        t0 = self.clock()
        reading = self.read()
        t1 = self.clock()
        second = int((t0 + t1) / 2)
        values = self.keep(second, reading)
        with self._lock:
            self._values[second] = values
            self.polls += 1
        return t0, t1

    def _next(self, t0: float, t1: float) -> float:
        """When the next poll starts: the middle of the next second of the clock (another interval: after it)."""
        if self.interval == INTERVAL_S:
            return math.floor(t1 - self.phase) + 1 + self.phase
        return t0 + self.interval


def _number(value: Any) -> float | None:
    """A value as series.json keeps it: a finite float, or None."""
    if value is None or isinstance(value, bool):
        return None
    number = float(value)
    return number if math.isfinite(number) else None

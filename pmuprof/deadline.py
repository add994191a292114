"""A CPU-time deadline on pmuprof's own in-process work (folding results, analysis, rules, writers).

Child processes (perf, the native readers) have their own watchdogs (``tools/proc.py``); this bounds what
runs inside the Python process, where a hostile or unexpected input could otherwise spin without end.
The budget is CPU seconds of this process (ITIMER_PROF), so a loaded host or time spent waiting for a
child does not count against it. Blocking reads cannot hang here: files named by inputs are opened
non-blocking and checked to be regular files first (``infile.py``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator

from .errors import ResourceError

ENV = "PMUPROF_STAGE_CPU_S"
DEFAULT_CPU_S = 900.0  # 15 min of pmuprof's own CPU per stage; the 2.9 M-sample reference report uses ~5 s


class StageTimeout(ResourceError):
    """A stage used more CPU than its budget (PMUPROF_STAGE_CPU_S)."""


def budget() -> float:
    """The per-stage budget in CPU seconds: PMUPROF_STAGE_CPU_S, else DEFAULT_CPU_S (0 or less: no bound)."""
    raw = os.environ.get(ENV, "")
    try:
        return float(raw) if raw.strip() else DEFAULT_CPU_S
    except ValueError:
        return DEFAULT_CPU_S


@contextlib.contextmanager
def cpu_bounded(what: str, seconds: float | None = None) -> Iterator[None]:
    """Inside: StageTimeout is raised in the main thread once this process has used ``seconds`` of CPU (default:
    ``budget()``). Nested blocks run under the outer one's budget; outside the main thread nothing is bounded."""
    limit = budget() if seconds is None else seconds
    if (
        limit <= 0
        or threading.current_thread() is not threading.main_thread()
        or signal.getitimer(signal.ITIMER_PROF) != (0.0, 0.0)
    ):
        yield
        return

    def expired(_signum: int, _frame: object) -> None:
        raise StageTimeout(
            f"{what} used more than {limit:g} s of CPU: stopped",
            f"the input is larger or stranger than expected; choose fewer processes (--pid/--comm), or raise {ENV}",
        )

    previous = signal.signal(signal.SIGPROF, expired)
    signal.setitimer(signal.ITIMER_PROF, limit)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)

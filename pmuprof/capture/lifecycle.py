"""The capture-source protocol, and the one exit stack that runs a capture's sources around perf's window.

A source (perf, the off-CPU tracer, server facts, the processlist, the host load, the kept binaries, ...)
has a ``start``, a ``stop`` that gives its typed part of the run (``Part``: run.json fields, warnings,
features off, per-second series, the files it wrote) and a ``cleanup`` that lets go of whatever it holds
(threads, children, connections, FIFOs) on any way out: a failure, a stop signal, a bug. ``run_sources``
starts them in order, waits until each is ready (at most READY_WAIT_S), then perf's window; when the
window ends it stops them with stop signals held: the window is ended first (perf told to stop), then
the per-second sources stop (``with_window``: their
values end where perf's do) while perf writes the rest of its file, then the window's stop waits for it,
then ``on_stopped`` (the demo stops its workload), then the others in reverse order of start (folding,
joining, archiving). series.json and run.json are written last, also when a stop failed; the cleanups
run for every source started, however the block is left.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from collections.abc import Callable, Mapping, Sequence

from .. import signals
from ..errors import PmuprofError
from ..model import rundir
from ..model.run import FeatureOff, Run, SourceRun
from ..model.series import Series, SeriesSet
from ..model.status import OwnTraffic
from . import diskroom
from .options import RecordOptions
from .runner import Outcome

# perf's window starts once every source is ready (its connection made, its first reading taken), or this long
# after they started: on a saturated host or server pmuprof's own connections can take seconds, and a window
# opened before them would have no server counters at its start; a server that cannot answer does not hold
# perf back longer than this (a stall is what perf must record).
READY_WAIT_S = 5.0


@dataclass(frozen=True)
class Child:
    """A program a source runs inside perf's window: spawned with perf, counting from SIGUSR1 (sent when
    perf's window starts), stopped with perf. ``user_sp``: perf must keep each sample's user sp for it.
    ``at_end``: called once when the window ends, before anything is stopped (quick; what it raises is
    dropped): what must be read at the instant the child's state is kept."""

    argv: tuple[str, ...]
    log: Path
    user_sp: bool = False
    at_end: Callable[[], None] | None = None


def _set() -> threading.Event:
    done = threading.Event()
    done.set()
    return done


@dataclass
class Window:
    """perf's window as the sources see it: the children they run in it (gathered before perf starts), how
    it went (set when perf stops, read by the sources that stop after it), and what pmuprof's own server
    connections added to the server's counters meanwhile (``own_sql``: each SQL source appends its part when
    it stops; the status source, stopping after them, takes it out of the counters it keeps).
    ``one_off_sql``: set while no source's one-off statements are running. The server facts' (a processlist
    and tablespaces read through information_schema make temporary tables, some on disk, that no session
    status measures) clear it when they start and set it when those are done; the status source's window
    opens after them."""

    children: dict[str, Child] = field(default_factory=dict)
    outcome: Outcome | None = None
    own_sql: list[OwnTraffic] = field(default_factory=list)
    one_off_sql: threading.Event = field(default_factory=_set)
    unready: list[str] = field(default_factory=list)  # the sources not ready when perf's window started

    def seconds(self) -> tuple[int, int] | None:
        """The first and last whole second of CLOCK_MONOTONIC inside the window (None: it never started)."""
        out = self.outcome
        if out is None or not out.window_start_s:
            return None
        return int(out.window_start_s), int(out.window_start_s + out.elapsed_s)


@dataclass(frozen=True)
class Context:
    """What every source is given: the options, the resolved targets, run.json as written before the sources
    start (targets, host, what was asked), perf's path, the terminal log, and the window."""

    opts: RecordOptions
    pids: tuple[int, ...]
    run: Run
    perf: str = "perf"
    log: Callable[[str], None] = lambda _m: None
    window: Window = field(default_factory=Window)

    @property
    def out_dir(self) -> Path:
        return self.opts.out_dir


@dataclass(frozen=True)
class Part:
    """A source's part of the run: the run.json fields it owns, its notes, its per-second series (into
    series.json), the run-directory files it wrote, and why it recorded nothing (when it did not)."""

    source: str
    fields: Mapping[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    features_off: tuple[FeatureOff, ...] = ()
    series: tuple[Series, ...] = ()
    files: tuple[str, ...] = ()
    why_not: str = ""

    def apply(self, run: Run) -> Run:
        return replace(run, **self.fields).with_notes(self.warnings, self.features_off)


class Unfinished(Exception):
    """Raised by a stop that failed part way, with the part it still gives (the error is its __cause__)."""

    def __init__(self, part: Part) -> None:
        super().__init__(part.source)
        self.part = part


class Source:
    """One capture source. Subclasses set ``name`` and override what they do; every method may be called
    on a source whose start failed or never ran, and ``cleanup`` after ``stop`` (then it does nothing)."""

    name = ""  # its entry in run.json "sources"
    with_window = False  # stopped right after perf's window, before the slow stops (per-second sources)

    def start(self, ctx: Context) -> None:
        """Begin measuring (a thread, a connection, a plan); quick: perf's window starts after every source."""

    def ready(self, ctx: Context, timeout: float) -> bool:
        """Wait up to ``timeout`` for what ``start`` began in the background (a thread's connection and first
        reading) to be measuring: perf's window starts after every source is ready or READY_WAIT_S passed."""
        return True

    def children(self) -> Mapping[str, Child]:
        """The programs it runs inside perf's window (asked once, after start)."""
        return {}

    def stop(self, ctx: Context) -> Part:
        """Stop measuring and write its files; ``ctx.window.outcome`` says how perf's window went."""
        return Part(self.name)

    def cleanup(self) -> None:
        """Let go of anything still held (threads, children, connections); quick, never raises."""


class WindowSource(Source):
    """The source that is the capture's window (perf): every other source lines up with it."""

    def wait(self, ctx: Context) -> None:
        """Run the window until it ends (the clock, a stop signal, the disk, the target gone)."""
        raise NotImplementedError

    def end(self, ctx: Context) -> None:
        """End the window without waiting for its programs to finish their files: ``ctx.window.outcome`` then
        says when it started and how long it ran, for the per-second sources stopped before ``stop``."""


def run_sources(
    ctx: Context, sources: Sequence[Source], window: WindowSource, on_stopped: Callable[[], None] | None = None
) -> tuple[Run, list[int]]:
    """Start ``sources`` in order, then run ``window``; stop all, write series.json and run.json. Returns the
    run as written and the stop signals that arrived after the window (the caller stops before folding)."""
    with contextlib.ExitStack() as stack:
        diskroom.hold(ctx.out_dir)
        stack.callback(diskroom.release, ctx.out_dir)
        for source in sources:
            stack.callback(source.cleanup)
            source.start(ctx)
            ctx.window.children.update(source.children())
        _await_ready(ctx, sources)
        stack.callback(window.cleanup)
        window.start(ctx)
        try:
            window.wait(ctx)
        except PmuprofError as err:  # perf failed: run.json still says what happened
            rundir.write_typed(ctx.out_dir / rundir.RUN_JSON, ctx.run.with_notes((f"capture failed: {err.message}",)))
            raise
        with signals.held() as pending:
            run = _stop_all(ctx, sources, window, on_stopped, pending)
    return run, pending


def _await_ready(ctx: Context, sources: Sequence[Source]) -> None:
    """Every source ready, or READY_WAIT_S after they started (the late ones are named in run.json)."""
    deadline = time.monotonic() + READY_WAIT_S
    for source in sources:
        if not source.ready(ctx, max(0.0, deadline - time.monotonic())):
            ctx.window.unready.append(source.name)
    if ctx.window.unready:
        ctx.log(f"warning: perf started before {', '.join(ctx.window.unready)} (not ready after {READY_WAIT_S:g} s)")


def _stop_all(
    ctx: Context, sources: Sequence[Source], window: WindowSource, on_stopped: Callable[[], None] | None, pending
) -> Run:
    later = list(reversed(sources))
    along = [s for s in later if s.with_window]
    slow = [s for s in later if not s.with_window]
    parts: dict[int, Part] = {}
    failed: BaseException | None = None
    try:
        try:  # perf stops recording; the per-second sources stop while it finishes its file
            window.end(ctx)
        except Exception as err:  # its stop() still waits for what it started; the others still stop
            failed = err
        for source in (*along, window, None, *slow):
            try:
                if source is None:  # perf and the per-second sources have stopped
                    if on_stopped is not None:
                        on_stopped()
                else:
                    parts[id(source)] = source.stop(ctx)
            except Unfinished as err:
                parts[id(source)], failed = err.part, failed or err.__cause__ or err
            except Exception as err:  # the others still stop and run.json is still written; raised after
                failed = failed or err
                if source is not None:
                    parts[id(source)] = Part(source.name, warnings=(f"{source.name}: not finished ({err})",))
    finally:
        stopped = [parts[id(s)] for s in (window, *along, *slow) if id(s) in parts]  # perf's notes first
        listed = [parts[id(s)] for s in (*sources, window) if id(s) in parts]
        run = _write(ctx, stopped, listed, pending)
    if failed is not None:
        raise failed
    return run


def _write(ctx: Context, stopped: list[Part], listed: list[Part], pending: list[int]) -> Run:
    """Every part into the run in the order the sources stopped (perf's notes first); series.json (cut to
    perf's window), then run.json, written last, listing the sources in the order they started."""
    run = ctx.run
    for part in stopped:
        run = part.apply(run)
    if ctx.window.unready:
        run = run.with_notes(
            (
                f"perf's window started before {', '.join(ctx.window.unready)} could measure (not ready "
                f"{READY_WAIT_S:g} s after starting: pmuprof's own connections to the server, or the host, were that "
                "slow): their first seconds of the window are missing",
            )
        )
    span = ctx.window.seconds()
    series = tuple(s.within(*span) if span else s for part in listed for s in part.series)
    run = replace(run, sources=tuple(r for r in (_listed(ctx, p) for p in listed) if r is not None))
    if pending and not run.stopped_by:  # a signal right after the window: it is what ended the capture
        run = replace(run, stopped_by=signal.Signals(pending.pop(0)).name)
    diskroom.release(ctx.out_dir)  # the last files go in the room kept for them
    try:
        if series:
            rundir.write_typed(ctx.out_dir / rundir.SERIES, SeriesSet(series=series), compact=True)
    except (OSError, PmuprofError, TypeError) as err:
        run = run.with_notes((f"{rundir.SERIES} not written: {err}",))
    finally:
        rundir.write_typed(ctx.out_dir / rundir.RUN_JSON, run)
    return run


def _listed(ctx: Context, part: Part) -> SourceRun | None:
    """A source's entry in run.json ``sources``; None for one that recorded nothing and has nothing to say
    (the off-CPU tracer that capture's default left off)."""
    files = tuple(f for f in part.files if (ctx.out_dir / f).exists())
    if not (files or part.series or part.fields or part.warnings or part.why_not):
        return None
    return SourceRun(part.source, files, tuple(s.name for s in part.series), part.why_not)

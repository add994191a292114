"""Record a run directory: the checks, the first run.json, then the capture sources around perf's window (no folding)."""

from __future__ import annotations

import datetime as _dt
import time
from dataclasses import replace
from pathlib import Path
from collections.abc import Callable, Sequence

from .. import __version__, rundir_create, signals
from ..errors import PmuprofError
from ..model import rundir
from ..model.jsontypes import from_json
from ..model.run import Clock, FeatureOff, Host, Pause, Record, Run, Stat, Target
from ..tools.native import helper
from ..tools.perf import argv as perfcmd
from . import events, sources
from .lifecycle import Context, Source, run_sources
from .offcpu import tracer as offcpu
from .options import RecordOptions
from .preflight import MAX_DURATION_S, check_disk, check_window, preflight, validate
from .proc import process as target
from .runner import Progress
from .window import Cap, Perf

__all__ = ["MAX_DURATION_S", "RecordOptions", "check_disk", "check_window", "read_clock", "record"]


def record(
    opts: RecordOptions,
    progress: Progress | None = None,
    log: Callable[[str], None] = lambda _m: None,
    on_recorded: Callable[[], None] | None = None,
    extra: Sequence[Source] = (),
) -> Path:
    """Capture into opts.out_dir (run.json, perf.data, counters.json, mysql.json, series.json, ...) and return it.

    The sources (capture/sources.py, then ``extra``) run around perf's window (capture/lifecycle.py).
    Ctrl-C keeps what was captured. ``on_recorded`` runs as soon as perf and the per-second sources
    have stopped (the demo stops its workload there). Folding and analysis are the pipeline's
    (pipeline.materialize).
    """
    validate(opts)
    pids = tuple(dict.fromkeys(target.resolve_pid(p) for p in opts.pids))
    perf, host_facts = preflight(opts)
    if opts.off_cpu:  # asked for: cannot run is an error now, not a note in run.json after the capture
        offcpu.require(pids)
    targets = tuple(target.describe(p, label) for p, label in target.labels_for(list(pids)).items())
    need = perfcmd.estimate_bytes(
        opts.frequency, host_facts["nproc"], opts.duration, opts.call_graph, sum(t.threads for t in targets), opts.mode
    )
    free, reserve = check_disk(opts.out_dir, need)
    rundir_create.create(opts.out_dir, opts.share)
    run = _started_run(opts)
    rundir.write_typed(opts.out_dir / rundir.RUN_JSON, run)  # from now on a run directory, reportable and pruned
    pmu_events, pmu_notes = _pmu_event_set(host_facts)
    run = replace(_initial_run(opts, targets, host_facts, pmu_events, pmu_notes, run.started), clock=run.clock)
    rundir.write_typed(opts.out_dir / rundir.RUN_JSON, run)
    log(
        f"recording {', '.join(f'{t.label} (pid {t.pid})' for t in targets)} for {opts.duration:g} s at "
        f"{opts.frequency} Hz, mode {opts.mode}{' cgroup ' + run.cgroup if run.cgroup else ''}"
    )
    ctx = Context(opts, pids, run, perf, log)
    window = Perf(Cap(min(need * 4, free - reserve), free - reserve < need * 4, reserve), progress)
    run, pending = run_sources(ctx, sources.make(ctx, extra), window, on_recorded)
    again = (ctx.window.outcome.again if ctx.window.outcome else 0) or next(iter(pending), 0)
    if again:  # a second signal: the run directory is complete; stop before folding
        raise signals.StopSignal(again)
    return opts.out_dir


def _record_asked(opts: RecordOptions) -> Record:
    return Record(
        event_requested=opts.event,
        frequency=opts.frequency,
        call_graph=opts.call_graph,
        per_thread_roots=opts.per_thread_roots,
    )


def read_clock() -> Clock:
    """CLOCK_MONOTONIC (perf's sample clock here, tools/perf/argv.SAMPLE_CLOCK) and the epoch read back to
    back, with the local UTC offset: what maps a sample's second to the host's wall clock."""
    mono, epoch = time.monotonic(), time.time()
    local = time.localtime(epoch)
    return Clock(
        monotonic_s=round(mono, 6), epoch_s=round(epoch, 6), utc_offset_s=local.tm_gmtoff, zone=local.tm_zone or ""
    )


def _started_run(opts: RecordOptions) -> Run:
    """The first run.json, written before anything slow: what was asked and when."""
    clock = read_clock()
    return Run(
        pmuprof_version=__version__,
        command=tuple(opts.command),
        started=_dt.datetime.fromtimestamp(int(clock.epoch_s), _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        duration_requested_s=opts.duration,
        mode=opts.mode,
        record=_record_asked(opts),
        clock=clock,
    )


def _initial_run(
    opts: RecordOptions,
    targets: tuple[Target, ...],
    host_facts: dict,
    pmu_events: list[tuple[str, str]],
    pmu_notes: list[str],
    started: str,
) -> Run:
    facts = {k: v for k, v in host_facts.items() if k != "pause"}
    pause = helper.calibrate_pause_or_error()
    return Run(
        pmuprof_version=__version__,
        command=tuple(opts.command),
        started=started,
        duration_requested_s=opts.duration,
        mode=opts.mode,
        cgroup=_shared_cgroup(targets) if opts.mode == "per-cpu" else None,
        targets=targets,
        host=replace(from_json(Host, facts), pause=from_json(Pause, pause), pfm_pmu=helper.core_pmu()),
        record=_record_asked(opts),
        stat=Stat(labels={perf_name: label for label, perf_name in pmu_events}, notes=tuple(pmu_notes)),
        features_off=tuple(from_json(FeatureOff, f) for f in helper.features_off()),
    )


def _pmu_event_set(host_facts: dict) -> tuple[list[tuple[str, str]], list[str]]:
    """cycles/instructions plus this CPU family's curated events (libpfm4 → perf raw), when a PMU exists."""
    if not host_facts["hardware_pmu"]:
        return [], [
            f"no hardware PMU: the {host_facts['microarch']} event set (PAUSE, HITM, remote DRAM) was not counted"
        ]
    base = [(name, name) for name in perfcmd.STAT_HARDWARE]
    try:
        extra, notes = events.encode_set(host_facts["microarch"], helper.encode)
    except PmuprofError as err:
        return base, [f"PMU event set off: {err}"]
    return base + extra, notes


def _shared_cgroup(targets: tuple[Target, ...]) -> str | None:
    """Sample per CPU but only inside the targets' cgroup, when they share one that is theirs (a service)."""
    groups = {t.cgroup for t in targets}
    group = groups.pop() if len(groups) == 1 else None
    return group if group and group.endswith((".service", ".scope")) else None

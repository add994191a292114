"""Record a run directory: perf record + perf stat on the targets, server and host facts (no folding here)."""

from __future__ import annotations

import datetime as _dt
import os
import shutil
import sys
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from .. import __version__
from ..errors import PerfError, PmuprofError, ResourceError, UsageError
from ..model import rundir
from ..model.counters import CounterValue, Counters
from ..model.jsontypes import from_json
from ..model.run import FeatureOff, Host, Pause, Record, Run, Stat, Target
from ..model.server import ServerFacts
from ..paths import perf_path
from ..tools.native import helper
from ..tools.perf import argv as perfcmd, parse as perfparse, read as perfread
from . import events
from .mysql import facts as mysql
from .offcpu import tracer as offcpu
from .runner import Control, Outcome, Progress, run_bounded
from .target import host, process as target

MAX_DURATION_S = 3600
NO_PMU_FIX = "run on bare metal or enable the vPMU (e.g. KVM `-cpu host,pmu=on`)"


@dataclass(frozen=True)
class RecordOptions:
    pids: tuple[int, ...]
    out_dir: Path
    duration: float = 30.0
    frequency: int = 99
    call_graph: str = "fp"
    mode: str = "per-cpu"
    event: str = "cycles"
    mysql: bool = True
    mysql_options: object | None = None  # pmuprof.capture.mysql.facts.MysqlOptions
    per_thread_roots: bool = False
    keep_perf_data: bool = True
    off_cpu: bool = False  # also sum off-CPU time per stack in the kernel (BPF; root only)
    command: tuple[str, ...] = field(default_factory=lambda: tuple(sys.argv))


def validate(opts: RecordOptions) -> None:
    if not opts.pids:
        raise UsageError("no target process", "pass -p PID (repeatable) or --all-mysqld")
    if not 0 < opts.duration <= MAX_DURATION_S:
        raise UsageError(f"--duration {opts.duration:g} is out of range", f"use 1..{MAX_DURATION_S} seconds")
    if not 1 <= opts.frequency <= 10000:
        raise UsageError(f"--frequency {opts.frequency} is out of range", "use 1..10000 Hz (99 is the low-overhead default)")
    if opts.out_dir.exists() and not opts.out_dir.is_dir():
        raise UsageError(f"{opts.out_dir} exists and is not a directory", "choose a new -o directory")
    if opts.out_dir.exists() and any(opts.out_dir.iterdir()):
        raise UsageError(f"{opts.out_dir} exists and is not empty", "choose a new -o directory")


def check_disk(out_dir: Path, need: int) -> int:
    """Refuse to start when the estimated perf.data would not fit with room to spare."""
    probe = out_dir if out_dir.exists() else out_dir.parent
    free = shutil.disk_usage(probe).free
    if free < need * 2 + 64 * 1024 * 1024:
        raise ResourceError(
            f"not enough free disk in {probe}: {free // 2**20} MiB free, the capture needs about {need // 2**20} MiB "
            f"plus as much again and 64 MiB to spare",
            "free space, lower --duration/--frequency, use --call-graph fp, or pass -o on a larger filesystem")
    return free


def preflight(opts: RecordOptions) -> tuple[str, dict]:
    perf = perf_path()
    if not perf or not (os.path.isfile(perf) or shutil.which(perf)):
        raise PerfError("perf is not installed", "apt-get install linux-perf (or set PMUPROF_PERF to a perf binary)")
    facts = host.facts(perf)
    paranoid = facts["perf_event_paranoid"]
    if not facts["is_root"] and paranoid is not None and paranoid > (0 if opts.mode == "per-cpu" else 1):
        raise PerfError(f"kernel.perf_event_paranoid={paranoid} forbids {opts.mode} profiling as a non-root user",
                        "run pmuprof as root, or `sysctl kernel.perf_event_paranoid=-1`, or grant CAP_PERFMON")
    return perf, facts


def record(opts: RecordOptions, progress: Progress | None = None,
           log: Callable[[str], None] = lambda _m: None, on_recorded: Callable[[], None] | None = None) -> Path:
    """Capture into opts.out_dir (run.json, perf.data, counters.json, mysql.json) and return it.

    Ctrl-C keeps what was captured. ``on_recorded`` runs as soon as perf has stopped (the demo
    stops its workload there). Folding and analysis are the pipeline's (pipeline.materialize).
    """
    validate(opts)
    pids = tuple(dict.fromkeys(target.resolve_pid(p) for p in opts.pids))
    perf, host_facts = preflight(opts)
    targets = tuple(target.describe(p, label) for p, label in target.labels_for(list(pids)).items())
    need = perfcmd.estimate_bytes(opts.frequency, host_facts["nproc"], opts.duration, opts.call_graph,
                                  sum(t.threads for t in targets), opts.mode)
    opts.out_dir.mkdir(parents=True, exist_ok=True)
    free = check_disk(opts.out_dir, need)
    pmu_events, pmu_notes = _pmu_event_set(host_facts)
    run = _initial_run(opts, targets, host_facts, pmu_events, pmu_notes)
    rundir.write_typed(opts.out_dir / rundir.RUN_JSON, run)  # a cut-short capture is still a run directory
    off = offcpu.plan(opts.out_dir, pids, {t.pid: t.label for t in targets}, opts.duration, opts.off_cpu)
    mysql_thread = _start_mysql(opts, pids, min(opts.duration, 5.0))
    log(f"recording {', '.join(f'{t.label} (pid {t.pid})' for t in targets)} for {opts.duration:g} s at "
        f"{opts.frequency} Hz, mode {opts.mode}{' cgroup ' + run.cgroup if run.cgroup else ''}")
    run, outcome = _record_with_fallback(opts, perf, pids, run, pmu_events, min(need * 3, free // 2), progress, log,
                                         offcpu.procs(off, opts.out_dir))
    if on_recorded is not None:
        on_recorded()
    run = _finish(opts, perf, run, outcome, mysql_thread, off)
    if not opts.keep_perf_data:
        (opts.out_dir / rundir.PERF_DATA).unlink(missing_ok=True)
    return opts.out_dir


def _initial_run(opts: RecordOptions, targets: tuple[Target, ...], host_facts: dict,
                 pmu_events: list[tuple[str, str]], pmu_notes: list[str]) -> Run:
    facts = {k: v for k, v in host_facts.items() if k != "pause"}
    pause = helper.calibrate_pause_or_error()
    return Run(pmuprof_version=__version__, command=tuple(opts.command),
               started=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
               duration_requested_s=opts.duration, mode=opts.mode,
               cgroup=_shared_cgroup(targets) if opts.mode == "per-cpu" else None, targets=targets,
               host=replace(from_json(Host, facts), pause=from_json(Pause, pause)),
               record=Record(event_requested=opts.event, frequency=opts.frequency, call_graph=opts.call_graph),
               stat=Stat(labels={perf_name: label for label, perf_name in pmu_events}, notes=tuple(pmu_notes)))


def _record_with_fallback(opts, perf, pids, run: Run, pmu_events, size_cap, progress, log,
                          extra: dict | None = None) -> tuple[Run, Outcome]:
    """perf record + stat (+ ``extra`` bounded processes); when perf refuses the cgroup filter, again without it."""
    try:
        return _run_perf(opts, perf, pids, run, pmu_events, size_cap, progress, extra)
    except PerfError as err:
        if not run.cgroup:
            raise
        log(f"perf refused the cgroup filter ({err.message}); sampling all CPUs without it")
        note = f"perf refused -G {run.cgroup} ({err.message}): sampled without the cgroup filter"
        return _run_perf(opts, perf, pids, replace(run, cgroup=None).with_notes((note,)), pmu_events, size_cap,
                         progress, extra)


def _run_perf(opts: RecordOptions, perf: str, pids: tuple[int, ...], run: Run, pmu_events: list[tuple[str, str]],
              size_cap: int, progress: Progress | None, extra: dict | None = None) -> tuple[Run, Outcome]:
    """perf record + perf stat (+ ``extra``, e.g. the off-CPU tracer) for the capture window."""
    data = opts.out_dir / rundir.PERF_DATA
    data.unlink(missing_ok=True)
    spec = perfcmd.RecordSpec(data, pids, opts.frequency, opts.call_graph, opts.mode, opts.event, run.cgroup,
                              max_size_bytes=size_cap)
    stat_events = perfcmd.STAT_SOFTWARE + tuple(perf_name for _, perf_name in pmu_events)
    control = Control(opts.out_dir)
    argv = {"record": (perfcmd.record_argv(perf, spec, control.argv()), opts.out_dir / rundir.RECORD_LOG),
            "stat": (perfcmd.stat_argv(perf, opts.out_dir / rundir.STAT_CSV, pids, stat_events, opts.mode,
                                       run.cgroup), opts.out_dir / rundir.STAT_LOG), **(extra or {})}
    outcome = run_bounded(argv, opts.duration, pids, run.host.perf_event_paranoid, progress, data, control)
    run = replace(run, record=replace(run.record, argv=tuple(argv["record"][0])),
                  stat=replace(run.stat, argv=tuple(argv["stat"][0])))
    return run, outcome


def _finish(opts: RecordOptions, perf: str, run: Run, outcome: Outcome, mysql_thread,
            off: offcpu.Plan | None = None) -> Run:
    """What really happened: events recorded, counters, server facts, off-CPU stacks; run.json written last."""
    stderr = perfparse.parse_record_stderr(outcome.stderr.get("record", ""))
    run = replace(run, duration_s=outcome.elapsed_s, interrupted=outcome.interrupted,
                  stopped_by=outcome.stopped_by,
                  record=replace(run.record, samples_total=stderr.get("samples_total"), lost=stderr.get("lost"),
                                 data_mb=stderr.get("data_mb")))
    run = run.with_notes(_outcome_warnings(outcome))
    try:
        run = _recorded_event(run, perf, opts.out_dir / rundir.PERF_DATA)
    finally:
        run = _write_counters(opts, run)
        run = _write_server_facts(opts, run, mysql_thread)
        run = _write_offcpu(opts, run, outcome, off)
        rundir.write_typed(opts.out_dir / rundir.RUN_JSON, run)
    return run


def _write_offcpu(opts: RecordOptions, run: Run, outcome: Outcome, off: offcpu.Plan | None) -> Run:
    if off is None or not off.requested:
        return run
    result, warnings, features_off = offcpu.finish(off, opts.out_dir, outcome.returncodes.get("offcpu"),
                                                   outcome.stderr.get("offcpu", ""), opts.per_thread_roots)
    return replace(run, offcpu=result).with_notes(warnings, features_off)


def _outcome_warnings(outcome: Outcome) -> tuple[str, ...]:
    out = []
    if outcome.target_exited:
        out.append(f"target pid(s) {', '.join(map(str, outcome.target_exited))} exited during the capture after "
                   f"{outcome.elapsed_s:.1f} s; the report covers the time before that")
    if outcome.interrupted:
        out.append(f"capture interrupted ({outcome.stopped_by or 'Ctrl-C'}) after {outcome.elapsed_s:.1f} s; "
                   "kept what was recorded")
    return tuple(out)


def _recorded_event(run: Run, perf: str, data: Path) -> Run:
    """perf may silently substitute cpu-clock for cycles on hosts without a PMU: say so."""
    rec = perfread.Recording(tuple(perfread.recorded_events(perf, data)), {}, {})
    run = replace(run, record=replace(run.record, event_recorded=rec.event,
                                      events_recorded=tuple(e["name"] for e in rec.events)))
    asked = perfparse.event_base(run.record.event_requested)
    if rec.event == asked:
        return run
    return run.with_notes(
        (f"perf recorded {rec.event} instead of {asked}: no usable hardware PMU on this host (a VM without a "
         f"vPMU?). Function shares are time-based and still right; cycle/IPC facts are unavailable",),
        (FeatureOff("hardware cycles sampling", f"perf substituted {rec.event}", NO_PMU_FIX),))


def _write_counters(opts: RecordOptions, run: Run) -> Run:
    stat_out = opts.out_dir / rundir.STAT_CSV
    rows = perfparse.parse_stat_csv(stat_out.read_text(errors="replace")) if stat_out.exists() else []
    values = []
    for row in rows:  # curated PMU events are named (pause_inst, remote_dram, ...); perf's spelling is kept
        name = run.stat.labels.get(row["event"].split(":")[0])
        if name and name != row["event"]:
            row = {**row, "perf": row["event"], "event": name}
        values.append(from_json(CounterValue, {k: v for k, v in row.items() if v is not None}))
    scope = f"cgroup {run.cgroup}" if run.cgroup else (
        "system-wide (all processes)" if opts.mode == "per-cpu" else "target threads")
    rundir.write_typed(opts.out_dir / rundir.COUNTERS, Counters(scope, run.duration_s, tuple(values),
                                                                perfparse.derived(rows)))
    if any(v.supported and v.event.split(":")[0] in ("cycles", "instructions") for v in values):
        return run
    return run.with_notes(features_off=(FeatureOff("IPC (cycles, instructions)", "no hardware PMU counters here",
                                                   "run on bare metal or a VM with a virtual PMU"),))


def _write_server_facts(opts: RecordOptions, run: Run, worker) -> Run:
    if worker is None:
        return run
    worker.join(timeout=30)
    facts = worker.facts or {"reachable": False, "error": "server facts timed out"}
    try:
        typed = from_json(ServerFacts, facts)
    except TypeError as err:  # a server answer pmuprof did not expect must not lose the capture
        typed = ServerFacts(reachable=False, error=f"server facts not understood ({err})")
    rundir.write_typed(opts.out_dir / rundir.MYSQL, typed)
    return run if typed.reachable else run.with_notes((f"server facts not collected: {typed.error}",))


def _pmu_event_set(host_facts: dict) -> tuple[list[tuple[str, str]], list[str]]:
    """cycles/instructions plus this CPU family's curated events (libpfm4 → perf raw), when a PMU exists."""
    if not host_facts["hardware_pmu"]:
        return [], [f"no hardware PMU: the {host_facts['microarch']} event set (PAUSE, HITM, remote DRAM) "
                    "was not counted"]
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


class _MysqlThread(threading.Thread):
    def __init__(self, opts: RecordOptions, pid: int, interval: float) -> None:
        super().__init__(daemon=True, name="pmuprof-mysql-facts")
        self.opts, self.pid, self.interval = opts, pid, interval
        self.facts: dict[str, Any] | None = None

    def run(self) -> None:
        try:
            options = self.opts.mysql_options or mysql.MysqlOptions()
            self.facts = mysql.collect_facts(options, pid=self.pid, interval_s=self.interval)
        except Exception as err:  # server facts must never fail a capture
            self.facts = {"reachable": False, "error": f"{type(err).__name__}: {err}"}


def _start_mysql(opts: RecordOptions, pids: tuple[int, ...], interval: float) -> _MysqlThread | None:
    if not opts.mysql:
        return None
    worker = _MysqlThread(opts, pids[0], interval)
    worker.start()
    return worker

"""Record a run directory: perf record + perf stat on the targets, server and host facts (no folding here)."""

from __future__ import annotations

import datetime as _dt
import os
import shutil
import signal
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from collections.abc import Callable

from .. import __version__, outfile, signals
from ..errors import PerfError, PmuprofError, ResourceError, UsageError
from ..model import rundir
from ..model.counters import CounterValue, Counters, event_name
from ..model.jsontypes import from_json
from ..model.run import Clock, FeatureOff, Host, Pause, Record, Run, Stat, Target
from ..model.server import ServerFacts
from ..packages import apt_install
from ..paths import perf_path
from ..tools.native import helper
from ..tools.perf import argv as perfcmd, parse as perfparse, read as perfread, repair
from . import diskroom, events
from .mysql import facts as mysql, poll as processlist
from .offcpu import tracer as offcpu
from .runner import Control, DiskGuard, Outcome, Progress, run_bounded
from .proc import host, hostload, process as target
from .proc.archive import keep_for_report

MAX_DURATION_S = 3600
MYSQL_JOIN_S = 30  # server facts still missing this long after perf stopped are given up
UNFINISHED_NOTE = (
    "perf did not close perf.data (killed, or out of disk): pmuprof set its data size from the file; "
    "the last samples may be missing"
)
SIZE_LIMIT = "perf size limit reached"  # perf record's stderr when --max-size stopped it
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
    # also sum off-CPU time per stack in the kernel (BPF; root only); None: where it is cheap (capture/offcpu AUTO)
    off_cpu: bool | None = False
    command: tuple[str, ...] = field(default_factory=lambda: tuple(sys.argv))


def check_window(duration: float, frequency: int, call_graph: str = "fp") -> None:
    """The options of one capture window, checked before anything starts (watch checks them up front)."""
    if not 0 < duration <= MAX_DURATION_S:
        raise UsageError(f"--duration {duration:g} s is out of range", f"use up to {MAX_DURATION_S} s (1 h)")
    if not 1 <= frequency <= 10000:
        raise UsageError(f"--frequency {frequency} is out of range", "use 1..10000 Hz (99 is the low-overhead default)")
    if call_graph == "lbr" and not host.has_lbr():
        raise PerfError(
            "--call-graph lbr needs Intel's Last Branch Record, which this CPU does not expose "
            "(no PMU 'branches' capability)",
            "use --call-graph fp, or dwarf for binaries without frame pointers",
        )


def validate(opts: RecordOptions) -> None:
    if not opts.pids:
        raise UsageError("no target process", "pass -p PID (repeatable) or --all-mysqld")
    check_window(opts.duration, opts.frequency, opts.call_graph)
    if opts.out_dir.exists() and not opts.out_dir.is_dir():
        raise UsageError(f"{opts.out_dir} exists and is not a directory", "choose a new -o directory")
    if opts.out_dir.exists() and any(opts.out_dir.iterdir()):
        raise UsageError(f"{opts.out_dir} exists and is not empty", "choose a new -o directory")


RESERVE_SHARE, RESERVE_MIN, RESERVE_MAX = 0.02, 16 << 20, 1 << 30


def disk_reserve(total: int) -> int:
    """Free space pmuprof never uses: 2 % of the filesystem, at least 16 MiB, at most 1 GiB."""
    return int(min(max(total * RESERVE_SHARE, RESERVE_MIN), RESERVE_MAX))


def _existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_disk(out_dir: Path, need: int) -> tuple[int, int]:
    """(free bytes, reserve) of the filesystem that will hold ``out_dir``; refuse to start when the
    estimated perf.data does not fit above the reserve (perf is also stopped at the reserve)."""
    probe = _existing(out_dir)
    try:
        usage, flags = shutil.disk_usage(probe), os.statvfs(probe).f_flag
    except OSError as err:
        raise outfile.os_error(err, probe, "check free space on") from err
    if flags & os.ST_RDONLY:
        raise ResourceError(f"cannot write in {probe}: read-only filesystem", "choose -o on a writable filesystem")
    reserve = disk_reserve(usage.total)
    if usage.free - reserve < need:
        raise ResourceError(
            f"not enough free disk in {probe}: {usage.free / 2**20:.0f} MiB free; this capture needs about "
            f"{need / 2**20:.0f} MiB for perf.data and pmuprof keeps {reserve / 2**20:.0f} MiB free (2 % of the "
            f"filesystem, at least 16 MiB) so the disk never fills",
            "free space, lower --duration/--frequency, use --call-graph fp, or pass -o on a larger filesystem",
        )
    return usage.free, reserve


def preflight(opts: RecordOptions) -> tuple[str, dict]:
    perf = perf_path()
    if not perf or not (os.path.isfile(perf) or shutil.which(perf)):
        raise PerfError("perf is not installed", f"{apt_install('perf')} (or set PMUPROF_PERF to a perf binary)")
    facts = host.facts(perf)
    if not facts["perf_version"]:
        raise PerfError(
            f"{perf} does not work: `perf version` gave no version (it hung, crashed, or is not perf)",
            "check PMUPROF_PERF, or reinstall linux-perf; `pmuprof doctor` shows it",
        )
    return perf, facts  # perf itself says when perf_event_paranoid forbids it (runner classifies)


def record(
    opts: RecordOptions,
    progress: Progress | None = None,
    log: Callable[[str], None] = lambda _m: None,
    on_recorded: Callable[[], None] | None = None,
) -> Path:
    """Capture into opts.out_dir (run.json, perf.data, counters.json, mysql.json) and return it.

    Ctrl-C keeps what was captured. ``on_recorded`` runs as soon as perf has stopped (the demo
    stops its workload there). Folding and analysis are the pipeline's (pipeline.materialize).
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
    outfile.ensure_dir(opts.out_dir)
    run = _started_run(opts)
    rundir.write_typed(opts.out_dir / rundir.RUN_JSON, run)  # from now on a run directory, reportable and pruned
    pmu_events, pmu_notes = _pmu_event_set(host_facts)
    run = replace(_initial_run(opts, targets, host_facts, pmu_events, pmu_notes, run.started), clock=run.clock)
    rundir.write_typed(opts.out_dir / rundir.RUN_JSON, run)
    diskroom.hold(opts.out_dir)
    off = offcpu.plan(
        opts.out_dir,
        pids,
        {t.pid: t.label for t in targets},
        opts.duration,
        opts.off_cpu,
        opts.frequency if opts.call_graph == "fp" else 0,
    )
    mysql_thread = _start_mysql(opts, pids, min(opts.duration, 5.0), log)
    poller = processlist.start(opts.mysql_options, pids[0], opts.out_dir) if opts.mysql else None  # type: ignore[arg-type]
    log(
        f"recording {', '.join(f'{t.label} (pid {t.pid})' for t in targets)} for {opts.duration:g} s at "
        f"{opts.frequency} Hz, mode {opts.mode}{' cgroup ' + run.cgroup if run.cgroup else ''}"
    )
    cap = Cap(min(need * 4, free - reserve), free - reserve < need * 4, reserve)
    load = hostload.Sampler(host_facts.get("nproc") or 1, tuple(pids))
    load.start()
    try:
        run, outcome = _record_with_fallback(
            opts,
            perf,
            pids,
            run,
            pmu_events,
            cap,
            progress,
            log,
            offcpu.procs(off, opts.out_dir),
            user_sp=off.sample_hz > 0,
        )
    except PmuprofError as err:  # perf failed or was killed: run.json still says what happened
        load.stop()
        processlist.finish(poller)
        diskroom.release(opts.out_dir)
        rundir.write_typed(opts.out_dir / rundir.RUN_JSON, run.with_notes((f"capture failed: {err.message}",)))
        raise
    with signals.held() as pending:  # writing run.json must not be cut short
        run = replace(run, host_load=load.stop()).with_notes(processlist.finish(poller))
        if on_recorded is not None:
            on_recorded()
        if pending and not outcome.stopped_by:
            outcome.stopped_by = signal.Signals(pending.pop(0)).name
        try:
            run = _finish(opts, perf, run, outcome, mysql_thread, cap, off)
        finally:
            diskroom.release(opts.out_dir)
        if not opts.keep_perf_data:
            (opts.out_dir / rundir.PERF_DATA).unlink(missing_ok=True)
    if outcome.again or pending:  # a second signal: the run directory is complete; stop before folding
        raise signals.StopSignal(outcome.again or pending[0])
    return opts.out_dir


@dataclass(frozen=True)
class Cap:
    """perf record --max-size, and whether it is the disk's limit (free space above the reserve)."""

    size: int
    by_disk: bool
    reserve: int


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


def _record_with_fallback(
    opts, perf, pids, run: Run, pmu_events, cap: Cap, progress, log, extra: dict | None = None, user_sp: bool = False
) -> tuple[Run, Outcome]:
    """perf record + stat (+ ``extra`` bounded processes); when perf refuses the cgroup filter, again without it.
    ``user_sp``: samples carry the user sp (the on-CPU sampler's stopped-walk key, model/callers.py)."""
    try:
        return _run_perf(opts, perf, pids, run, pmu_events, cap, progress, extra, user_sp)
    except PerfError as err:
        if not run.cgroup:
            raise
        log(f"perf refused the cgroup filter ({err.message}); sampling all CPUs without it")
        note = f"perf refused -G {run.cgroup} ({err.message}): sampled without the cgroup filter"
        return _run_perf(
            opts, perf, pids, replace(run, cgroup=None).with_notes((note,)), pmu_events, cap, progress, extra, user_sp
        )


def _run_perf(
    opts: RecordOptions,
    perf: str,
    pids: tuple[int, ...],
    run: Run,
    pmu_events: list[tuple[str, str]],
    cap: Cap,
    progress: Progress | None,
    extra: dict | None = None,
    user_sp: bool = False,
) -> tuple[Run, Outcome]:
    """perf record + perf stat (+ ``extra``, the off-CPU tracer, started by SIGUSR1) for the capture window."""
    data = opts.out_dir / rundir.PERF_DATA
    data.unlink(missing_ok=True)
    spec = perfcmd.RecordSpec(
        data,
        pids,
        opts.frequency,
        opts.call_graph,
        opts.mode,
        opts.event,
        run.cgroup,
        max_size_bytes=cap.size,
        user_sp=user_sp,
    )
    stat_events = perfcmd.STAT_SOFTWARE + tuple(perf_name for _, perf_name in pmu_events)
    control = Control(opts.out_dir)
    argv = {
        "record": (perfcmd.record_argv(perf, spec, control.argv()), opts.out_dir / rundir.RECORD_LOG),
        "stat": (
            perfcmd.stat_argv(perf, opts.out_dir / rundir.STAT_CSV, pids, stat_events, opts.mode, run.cgroup),
            opts.out_dir / rundir.STAT_LOG,
        ),
        **(extra or {}),
    }
    outcome = run_bounded(
        argv,
        opts.duration,
        pids,
        run.host.perf_event_paranoid,
        progress,
        data,
        control,
        DiskGuard(opts.out_dir, cap.reserve, room=True),
        starters=tuple(extra or {}),
    )
    run = replace(
        run,
        record=replace(run.record, argv=tuple(argv["record"][0])),
        stat=replace(run.stat, argv=tuple(argv["stat"][0])),
    )
    return run, outcome


def _finish(
    opts: RecordOptions, perf: str, run: Run, outcome: Outcome, mysql_thread, cap: Cap, off: offcpu.Plan | None = None
) -> Run:
    """What really happened: events recorded, counters, server facts, off-CPU stacks; run.json written last."""
    stderr = perfparse.parse_record_stderr(outcome.stderr.get("record", ""))
    if outcome.stopped_by == "disk" or diskroom.perf_ran_out(outcome.stderr.get("record", "")):
        diskroom.release(opts.out_dir)  # the last files go in the room kept for them
        if not outcome.stopped_by:
            outcome.stopped_by = "disk"
            outcome.disk_low = f"perf record could not write perf.data ({diskroom.PERF_FULL}) in {opts.out_dir}"
    if SIZE_LIMIT in outcome.stderr.get("record", "") and not outcome.stopped_by:
        if cap.by_disk:
            outcome.stopped_by = "disk"
            outcome.disk_low = (
                f"perf.data reached {cap.size / 2**20:.0f} MiB, all the space above the "
                f"{cap.reserve / 2**20:.0f} MiB pmuprof keeps free on {opts.out_dir}"
            )
        else:
            run = run.with_notes(
                (
                    f"perf.data reached its size limit ({cap.size / 2**20:.0f} MiB, 4x the estimate) "
                    f"after {outcome.elapsed_s:.1f} s: the capture is shorter than asked",
                )
            )
    run = replace(
        run,
        duration_s=outcome.elapsed_s,
        interrupted=outcome.interrupted,
        stopped_by=outcome.stopped_by or ("perf-killed" if outcome.perf_killed else ""),
        record=replace(
            run.record,
            samples_total=stderr.get("samples_total"),
            lost=stderr.get("lost"),
            data_mb=stderr.get("data_mb"),
        ),
    )
    run = run.with_notes(_outcome_warnings(outcome))
    if repair.finish_header(opts.out_dir / rundir.PERF_DATA):
        run = run.with_notes((UNFINISHED_NOTE,))
    try:
        run = _recorded_event(run, perf, opts.out_dir / rundir.PERF_DATA)
    finally:
        try:
            run = _write_counters(opts, run)
            run = _write_server_facts(opts, run, mysql_thread)
            run = _write_offcpu(opts, run, outcome, off)
            run = keep_for_report(opts.out_dir, perf, run, opts.keep_perf_data)
        finally:  # run.json last, even when one of those could not be written
            rundir.write_typed(opts.out_dir / rundir.RUN_JSON, run)
    return run


def _write_offcpu(opts: RecordOptions, run: Run, outcome: Outcome, off: offcpu.Plan | None) -> Run:
    if off is None or not off.requested:
        return run
    result, warnings, features_off = offcpu.finish(
        off, opts.out_dir, outcome.returncodes.get("offcpu"), outcome.stderr.get("offcpu", ""), opts.per_thread_roots
    )
    return replace(run, offcpu=result).with_notes(warnings, features_off)


def _outcome_warnings(outcome: Outcome) -> tuple[str, ...]:
    out = []
    if outcome.target_exited:
        out.append(
            f"target pid(s) {', '.join(map(str, outcome.target_exited))} exited during the capture after "
            f"{outcome.elapsed_s:.1f} s; the report covers the time before that"
        )
    if outcome.interrupted:
        out.append(
            f"capture interrupted ({outcome.stopped_by or 'Ctrl-C'}) after {outcome.elapsed_s:.1f} s; "
            "kept what was recorded"
        )
    if outcome.perf_killed:
        out.append(
            f"perf record was killed by {outcome.perf_killed} after {outcome.elapsed_s:.1f} s (the OOM "
            "killer or another tool?); the report covers what it wrote"
        )
    if outcome.stopped_by == "disk":
        out.append(f"capture stopped after {outcome.elapsed_s:.1f} s to keep the disk from filling: {outcome.disk_low}")
    return tuple(out)


def _recorded_event(run: Run, perf: str, data: Path) -> Run:
    """perf may silently substitute cpu-clock for cycles on hosts without a PMU: say so."""
    rec = perfread.Recording(tuple(perfread.recorded_events(perf, data)), {}, {})
    run = replace(
        run, record=replace(run.record, event_recorded=rec.event, events_recorded=tuple(e["name"] for e in rec.events))
    )
    asked = event_name(run.record.event_requested)
    if rec.event == asked:
        return run
    return run.with_notes(
        (
            f"perf recorded {rec.event} instead of {asked}: no usable hardware PMU on this host (a VM without a "
            f"vPMU?). Function shares are time-based and still right; cycle/IPC facts are unavailable",
        ),
        (FeatureOff("hardware cycles sampling", f"perf substituted {rec.event}", NO_PMU_FIX),),
    )


def _write_counters(opts: RecordOptions, run: Run) -> Run:
    stat_out = opts.out_dir / rundir.STAT_CSV
    rows = perfparse.parse_stat_csv(stat_out.read_text(errors="replace")) if stat_out.exists() else []
    values = []
    for row in rows:  # curated PMU events are named (pause_inst, remote_dram, ...); perf's spelling is kept
        name = run.stat.labels.get(event_name(row["event"]))
        if name and name != row["event"]:
            row = {**row, "perf": row["event"], "event": name}
        values.append(from_json(CounterValue, {k: v for k, v in row.items() if v is not None}))
    scope = (
        f"cgroup {run.cgroup}"
        if run.cgroup
        else ("system-wide (all processes)" if opts.mode == "per-cpu" else "target threads")
    )
    counters = Counters(scope, run.duration_s, tuple(values))
    ipc = counters.ipc()
    rundir.write_typed(
        opts.out_dir / rundir.COUNTERS, replace(counters, derived={"ipc": round(ipc, 4)} if ipc is not None else {})
    )
    if counters.value("cycles") is not None or counters.value("instructions") is not None:
        return run
    return run.with_notes(
        features_off=(
            FeatureOff(
                "IPC (cycles, instructions)",
                "no hardware PMU counters here",
                "run on bare metal or a VM with a virtual PMU",
            ),
        )
    )


def _write_server_facts(opts: RecordOptions, run: Run, worker) -> Run:
    if worker is None:
        return run
    worker.join(timeout=MYSQL_JOIN_S)
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


class _MysqlThread(threading.Thread):
    def __init__(self, opts: RecordOptions, pid: int, interval: float, log: Callable[[str], None]) -> None:
        super().__init__(daemon=True, name="pmuprof-mysql-facts")
        self.opts, self.pid, self.interval, self.log = opts, pid, interval, log
        self.facts: dict[str, Any] | None = None

    def run(self) -> None:
        try:
            options = self.opts.mysql_options or mysql.MysqlOptions()
            self.facts = mysql.collect_facts(options, pid=self.pid, interval_s=self.interval)
        except Exception as err:  # server facts must never fail a capture
            self.facts = {"reachable": False, "error": f"{type(err).__name__}: {err}"}
        if not self.facts.get("reachable", True):  # said once, now, on the terminal; the capture goes on
            self.log(
                f"warning: server facts not collected ({self.facts.get('error') or 'unreachable'}); the "
                "capture goes on — pass --mysql-socket / --defaults-file, or --no-mysql"
            )


def _start_mysql(
    opts: RecordOptions, pids: tuple[int, ...], interval: float, log: Callable[[str], None]
) -> _MysqlThread | None:
    if not opts.mysql:
        return None
    worker = _MysqlThread(opts, pids[0], interval, log)
    worker.start()
    return worker

"""Record a run directory: perf record + perf stat on the targets, server and host facts, folding."""

from __future__ import annotations

import datetime as _dt
import os
import shutil
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .. import __version__
from ..errors import PerfError, PmuprofError, ResourceError, UsageError
from ..model import rundir
from ..paths import perf_path
from . import events, postprocess
from .target import host, process as target
from ..tools.perf import argv as perfcmd, parse as perfparse
from .runner import Control, Progress, run_bounded

MAX_DURATION_S = 3600


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
    mysql_options: object | None = None  # pmuprof.capture.mysql.MysqlOptions
    per_thread_roots: bool = False
    keep_perf_data: bool = True
    command: tuple[str, ...] = field(default_factory=lambda: tuple(sys.argv))


def validate(opts: RecordOptions) -> None:
    if not opts.pids:
        raise UsageError("no target process", "pass -p PID (repeatable) or --all-mysqld")
    if not 0 < opts.duration <= MAX_DURATION_S:
        raise UsageError(f"--duration {opts.duration} is out of range", f"use 1..{MAX_DURATION_S} seconds")
    if not 1 <= opts.frequency <= 10000:
        raise UsageError(f"--frequency {opts.frequency} is out of range", "use 1..10000 Hz (99 is the low-overhead default)")
    if opts.out_dir.exists() and any(opts.out_dir.iterdir()):
        raise UsageError(f"{opts.out_dir} exists and is not empty", "choose a new -o directory")


def check_disk(out_dir: Path, need: int) -> int:
    """Refuse to start when the estimated perf.data would not fit with room to spare."""
    probe = out_dir if out_dir.exists() else out_dir.parent
    free = shutil.disk_usage(probe).free
    if free < need * 2 + 64 * 1024 * 1024:
        raise ResourceError(
            f"not enough free disk in {probe}: {free // 2**20} MiB free, the capture needs about {need // 2**20} MiB",
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
    """Capture into opts.out_dir and return it. Ctrl-C keeps and folds what was captured.

    ``on_recorded`` runs as soon as perf has stopped, before folding (the demo stops its workload there).
    """
    validate(opts)
    pids = tuple(dict.fromkeys(target.resolve_pid(p) for p in opts.pids))
    perf, host_facts = preflight(opts)
    targets = [target.describe(p, label) for p, label in target.labels_for(list(pids)).items()]
    threads = sum(t["threads"] for t in targets)
    need = perfcmd.estimate_bytes(opts.frequency, host_facts["nproc"], opts.duration, opts.call_graph, threads, opts.mode)
    opts.out_dir.mkdir(parents=True, exist_ok=True)
    free = check_disk(opts.out_dir, need)
    cgroup = _shared_cgroup(targets) if opts.mode == "per-cpu" else None
    pmu_events, pmu_notes = _pmu_event_set(host_facts)
    host_facts["pause"] = postprocess.calibrate_pause()
    mysql_thread = _start_mysql(opts, pids, min(opts.duration, 5.0))
    started = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    log(f"recording {', '.join(t['label'] + ' (pid ' + str(t['pid']) + ')' for t in targets)} for "
        f"{opts.duration:g} s at {opts.frequency} Hz, mode {opts.mode}{' cgroup ' + cgroup if cgroup else ''}")
    size_cap = min(need * 3, free // 2)
    try:
        argv, outcome = _run_perf(opts, perf, pids, host_facts, pmu_events, cgroup, size_cap, progress)
    except PerfError as err:
        if not cgroup:
            raise
        log(f"perf refused the cgroup filter ({err.message}); sampling all CPUs without it")
        cgroup_note = f"perf refused -G {cgroup} ({err.message}): sampled without the cgroup filter"
        cgroup = None
        argv, outcome = _run_perf(opts, perf, pids, host_facts, pmu_events, None, size_cap, progress)
    else:
        cgroup_note = None
    if on_recorded is not None:
        on_recorded()
    run = {
        "pmuprof_version": __version__, "command": list(opts.command), "started": started,
        "duration_s": outcome.elapsed_s, "duration_requested_s": opts.duration,
        "interrupted": outcome.interrupted, "mode": opts.mode, "cgroup": cgroup,
        "targets": targets, "host": host_facts,
        "record": {"argv": argv["record"][0], "event_requested": opts.event, "frequency": opts.frequency,
                   "call_graph": opts.call_graph, **perfparse.parse_record_stderr(outcome.stderr.get("record", ""))},
        "stat": {"argv": argv["stat"][0], "labels": {perf: label for label, perf in pmu_events},
                 "notes": pmu_notes}, "warnings": [cgroup_note] if cgroup_note else [], "features_off": [],
    }
    if outcome.target_exited:
        run["warnings"].append(f"target pid(s) {', '.join(map(str, outcome.target_exited))} exited during the "
                               f"capture after {outcome.elapsed_s:.1f} s; the report covers the time before that")
    if outcome.interrupted:
        run["warnings"].append(f"capture interrupted (Ctrl-C) after {outcome.elapsed_s:.1f} s; kept what was recorded")
    postprocess.finish(opts, perf, run, opts.out_dir / rundir.STAT_CSV, mysql_thread, log)
    return opts.out_dir


def _run_perf(opts: RecordOptions, perf: str, pids: tuple[int, ...], host_facts: dict,
              pmu_events: list[tuple[str, str]], cgroup: str | None, size_cap: int, progress: Progress | None):
    """perf record + perf stat for the capture window; returns (argv by name, runner outcome)."""
    data = opts.out_dir / rundir.PERF_DATA
    data.unlink(missing_ok=True)
    spec = perfcmd.RecordSpec(data, pids, opts.frequency, opts.call_graph, opts.mode, opts.event, cgroup,
                              max_size_bytes=size_cap)
    stat_events = perfcmd.STAT_SOFTWARE + tuple(perf_name for _, perf_name in pmu_events)
    stat_out = opts.out_dir / rundir.STAT_CSV
    control = Control(opts.out_dir)
    argv = {"record": (perfcmd.record_argv(perf, spec, control.argv()), opts.out_dir / rundir.RECORD_LOG),
            "stat": (perfcmd.stat_argv(perf, stat_out, pids, stat_events, opts.mode, cgroup),
                     opts.out_dir / rundir.STAT_LOG)}
    outcome = run_bounded(argv, opts.duration, pids, host_facts["perf_event_paranoid"], progress, data, control)
    return argv, outcome


def _pmu_event_set(host_facts: dict) -> tuple[list[tuple[str, str]], list[str]]:
    """cycles/instructions plus this CPU family's curated events (libpfm4 → perf raw), when a PMU exists."""
    if not host_facts["hardware_pmu"]:
        return [], [f"no hardware PMU: the {host_facts['microarch']} event set (PAUSE, HITM, remote DRAM) "
                    "was not counted"]
    base = [(name, name) for name in perfcmd.STAT_HARDWARE]
    try:
        from ..tools.native import helper
        extra, notes = events.encode_set(host_facts["microarch"], helper.encode)
    except (ImportError, PmuprofError) as err:
        return base, [f"PMU event set off: {err}"]
    return base + extra, notes


def _shared_cgroup(targets: list[dict]) -> str | None:
    """Sample per CPU but only inside the targets' cgroup, when they share one that is theirs (a service)."""
    groups = {t.get("cgroup") for t in targets}
    group = groups.pop() if len(groups) == 1 else None
    return group if group and group.endswith((".service", ".scope")) else None


class _MysqlThread(threading.Thread):
    def __init__(self, opts: RecordOptions, pid: int, interval: float) -> None:
        super().__init__(daemon=True, name="pmuprof-mysql-facts")
        self.opts, self.pid, self.interval, self.facts = opts, pid, interval, None

    def run(self) -> None:
        from .mysql import facts as mysql
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

"""Summaries of the run, the server and the analysis for the report: targets, host, event, binaries, facts."""

from __future__ import annotations

from typing import Any
from collections.abc import Mapping

from .. import __version__
from ..findings.facts import server_version
from ..model.jsontypes import to_json
from ..model.profile import Profile
from ..model.run import CpuUser, CpuUsers, Host, HostLoad, Target, Trigger
from ..model.server import ServerFacts
from .summaryrows import (
    ErrorLogRow,
    FeatureOffRow,
    HostRow,
    KeptProcess,
    LabelValue,
    MysqlFacts,
    MysqlRead,
    MysqlUnread,
    PauseRow,
    SemaphoreLatch,
    SemaphoresRow,
    Summary,
    TargetRow,
)

SPIN_VARIABLES = (
    "innodb_spin_wait_delay",
    "innodb_sync_spin_loops",
    "innodb_spin_wait_pause_multiplier",
    "innodb_log_spin_wait_delay",
    "innodb_sync_array_size",
    "innodb_thread_concurrency",
    "innodb_buffer_pool_instances",
    "innodb_adaptive_hash_index",
    "innodb_adaptive_hash_index_parts",
    "innodb_page_cleaners",
    "innodb_numa_interleave",
    "innodb_flush_log_at_trx_commit",
    "thread_handling",
    "thread_pool_size",
)


def event_names(profile: Profile) -> tuple[str, str]:
    """(event asked for, event perf really recorded) from the run, else a folded file's headers."""
    record, headers = profile.run.record, profile.run.source.headers
    requested = record.event_requested or headers.get("event_requested", "")
    recorded = record.event_recorded or headers.get("event_recorded") or headers.get("event") or requested
    return requested, recorded


def _target_row(t: Target, samples: int | None) -> TargetRow:
    return TargetRow(
        pid=t.pid,
        label=t.label,
        comm=t.comm,
        exe=t.exe,
        build_id=t.build_id,
        threads=t.threads,
        cgroup=t.cgroup,
        cpus_allowed=t.cpus_allowed,
        frame_pointers=t.symbols.frame_pointers if t.symbols else "unknown",
        samples=samples,
    )


def _host_row(h: Host) -> HostRow:
    return HostRow(
        hostname=h.hostname,
        cpu_model=h.cpu_model,
        microarch=h.microarch,
        vendor=h.vendor,
        nproc=h.nproc,
        kernel=h.kernel,
        hardware_pmu=h.hardware_pmu,
        perf_version=h.perf_version,
        perf_event_paranoid=h.perf_event_paranoid,
        pfm_pmu=h.pfm_pmu,
    )


def summary(profile: Profile, processes: list[str]) -> Summary:
    """What was profiled, how, on what host, and what went wrong along the way."""
    run, analysis = profile.run, profile.analysis
    requested, recorded = event_names(profile)
    warnings = list(dict.fromkeys(run.warnings + analysis.warnings))
    if requested and recorded and requested != recorded:
        text = f"perf recorded {recorded} instead of {requested}"
        if not any(text in w for w in warnings):
            warnings.insert(0, text + ": the shares are time on CPU, not cycles")
    pause = run.host.pause
    by_label = {p.label: p.samples for p in analysis.processes}
    out = Summary(
        pmuprof_version=run.pmuprof_version or __version__,
        report_version=__version__,
        source=profile.source,
        command=list(run.command),
        started=run.started,
        duration_s=run.duration_s,
        interrupted=run.interrupted,
        mode=run.mode,
        processes=processes,
        kept=[
            KeptProcess(label=p.label, pid=p.pid, comm=p.comm, binary=p.binary, samples=p.samples, kept=p.kept)
            for p in analysis.processes
        ],
        selection=analysis.selection,
        targets=[_target_row(t, by_label.get(t.label, t.samples)) for t in run.targets],
        host=_host_row(run.host),
        pause=PauseRow(cycles=pause.cycles, ns=pause.ns) if pause and pause.cycles is not None else None,
        event_requested=requested,
        event_recorded=recorded,
        event_substituted=bool(requested and recorded and requested != recorded),
        frequency=run.record.frequency,
        call_graph=run.record.call_graph,
        samples=profile.total,
        samples_total=run.record.samples_total,
        lost=run.record.lost,
        unit=profile.unit,
        perf_argv=list(run.record.argv),
        warnings=warnings,
        features_off=[
            FeatureOffRow(feature=f.feature, why=f.why, fix=f.fix) for f in run.features_off + analysis.features_off
        ],
        binaries=[to_json(b) for b in analysis.binaries if b.samples or b.problem],
        server_version=_version_text(*server_version(profile)),
        trigger=trigger_text(run.trigger),
        host_load=host_load_rows(run.host_load) + cpu_user_rows(run.cpu_users),
    )
    if run.record.frequency_requested:  # perf used another rate than asked (throttled)
        out["frequency_requested"] = run.record.frequency_requested
    return out


def _pc(share: float, digits: int = 0) -> str:
    return f"{100 * share:.{digits}f} %"


def host_load_rows(load: HostLoad | None) -> list[LabelValue]:
    """The host-context card: how busy the host was while perf recorded (run.json host_load, what pt-stalk's
    vmstat and mpstat show), one (label, value) row each; [] when the input did not measure it."""
    if load is None or not load.cpus:
        return []
    own = f", {_pc(load.targets_share)} by the targets" if load.targets_share is not None else ""
    rows = [
        (
            "load average",
            f"{load.loadavg_1m:g} (1 min, at the end) on {load.cpus} CPUs"
            if load.loadavg_1m is not None
            else f"not read ({load.cpus} CPUs)",
        ),
        (
            "run queue",
            f"{load.runnable_avg:g} runnable on average, at most {load.runnable_max} (pmuprof's own threads included)",
        ),
        (
            "CPU",
            f"{_pc(load.busy_share)} busy{own}; steal {_pc(load.steal_share, 1)}; iowait {_pc(load.iowait_share, 1)}",
        ),
    ]
    if load.psi_cpu_some_share is not None:
        rows.append(("waited for a CPU", f"{_pc(load.psi_cpu_some_share)} of the time (PSI cpu some)"))
    rows += [
        ("context switches", f"{load.context_switches_per_s:,.0f} /s"),
        ("blocked (D state)", f"{load.blocked_avg:g} tasks on average"),
    ]
    memory = []
    if load.mem_available_min_bytes is not None:
        memory.append(f"{load.mem_available_min_bytes / 2**30:.1f} GiB available at the lowest")
    if load.swap_in_pages_per_s is not None or load.swap_out_pages_per_s is not None:
        memory.append(f"swap in {load.swap_in_pages_per_s or 0:g}, out {load.swap_out_pages_per_s or 0:g} pages/s")
    if load.psi_memory_some_share is not None:
        memory.append(f"stalled {_pc(load.psi_memory_some_share)} of the time (PSI memory some)")
    if memory:
        rows.append(("memory", "; ".join(memory)))
    return [LabelValue(label=label, value=value) for label, value in rows] + [
        LabelValue(label="window", value=f"{load.seconds:.1f} s, /proc read {_how_often(load.interval_s)}")
    ]


def cpu_user_rows(users: CpuUsers | None) -> list[LabelValue]:
    """Who used the CPUs over the window (run.json cpu_users): the busiest processes and cgroups, the targets'
    own share, as rows of the host card; [] when the input did not measure it."""
    if users is None or not users.cpus:
        return []

    def named(rows: tuple[CpuUser, ...], process: bool) -> str:
        return ", ".join(
            f"{u.name}{f' (pid {u.pid})' if process else ''}{' — target' if u.target else ''} {_pc(u.share)}"
            for u in rows
            if u.share >= 0.005
        )

    rows = [("CPU users", named(users.processes, True) or "none measurable")]
    if users.cgroups:
        rows.append(("CPU by cgroup", named(users.cgroups, False)))
    if users.targets_share is not None:
        rows.append(("the targets' share", f"{_pc(users.targets_share, 1)} of all CPUs' time"))
    return [LabelValue(label=label, value=value) for label, value in rows]


def _how_often(interval_s: float | None) -> str:
    """How often the host-load source read /proc: once a second since it is a per-second source, every half
    second before (a run.json without ``interval_s``)."""
    if interval_s is None:
        return "twice a second"
    return "once a second" if interval_s == 1 else f"every {interval_s:g} s"


def _version_text(version: str, source: str) -> str:
    return f"{version}, read from its binary; variables and status unknown" if source == "binary" else version


def trigger_text(trigger: Trigger | None) -> str:
    """'Threads_running>=4 held for 3 polls (6, 6, 9) at …' for captures taken by `pmuprof watch`."""
    if trigger is None or not trigger.condition:
        return ""
    values = [p.values.get(trigger.condition) for p in trigger.polls_before]
    recent = values[-(trigger.consecutive_hits or 3) :]
    shown = ", ".join(f"{v:g}" for v in recent if isinstance(v, (int, float)))
    text = f"{trigger.condition} held for {trigger.consecutive_hits if trigger.consecutive_hits is not None else '?'} polls"
    return text + (f" ({shown})" if shown else "") + (f" at {trigger.fired_at}" if trigger.fired_at else "")


def _semaphores(sem: Mapping[str, Any] | None) -> SemaphoresRow | None:
    if not sem:
        return None
    latches = [
        SemaphoreLatch(
            kind=kind, spin_waits=vals.get("spin_waits"), rounds=vals.get("rounds"), os_waits=vals.get("os_waits")
        )
        for kind, vals in sorted((sem.get("latches") or {}).items())
        if vals
    ]
    return SemaphoresRow(
        empty=bool(sem.get("empty")),
        os_wait_array=dict(sem.get("os_wait_array") or {}),
        latches=latches,
        spin_rounds_per_wait=dict(sem.get("spin_rounds_per_wait") or {}),
    )


def mysql_facts(server: ServerFacts | None) -> MysqlFacts:
    """Server version, spin variables, SEMAPHORES, processlist states and what could not be read."""
    if server is None:
        return MysqlUnread(
            reachable=False,
            missing=[],
            error="no mysql.json in this input (bare perf data or folded file): variables and status unknown",
        )
    if not server.reachable:
        return MysqlUnread(reachable=False, error=server.error or "server not reachable", missing=list(server.missing))
    plist = server.processlist
    states = sorted((plist.states if plist else {}).items(), key=lambda kv: (-kv[1], kv[0]))
    running = [server.status.before.get("Threads_running"), server.status.after.get("Threads_running")]
    log = server.error_log or {}
    return MysqlRead(
        reachable=True,
        source=server.source,
        version=server.server.version,
        version_comment=server.server.version_comment,
        family=server.server.family or "",
        variables=[(name, str(server.variables[name])) for name in SPIN_VARIABLES if name in server.variables],
        semaphores=_semaphores(server.semaphores),
        threads=plist.threads if plist else None,
        states=[("(no state)" if k == "(none)" else k, v) for k, v in states],  # mysql.json's key for an empty State
        threads_running=[v for v in running if v is not None],
        error_log=ErrorLogRow(path=log.get("path"), memory_barrier=log.get("memory_barrier"), line=log.get("line")),
        my_cpu_relax_multiplier=server.my_cpu_relax_multiplier,
        missing=list(server.missing),
    )


def numa_text(target: Target | None) -> str:
    """'CPUs 0-15 (node 0); memory node0 80 %, node1 20 %' from a run.json target."""
    if target is None:
        return ""
    parts = []
    if target.cpus_allowed:
        nodes = ",".join(str(n) for n in (target.numa.cpu_nodes if target.numa else ()))
        parts.append(f"CPUs {target.cpus_allowed}" + (f" (node {nodes})" if nodes else ""))
    mem = target.numa.memory_pages if target.numa else {}
    total = sum(mem.values())
    if total:
        parts.append("memory " + ", ".join(f"node{k} {100.0 * v / total:.0f} %" for k, v in sorted(mem.items())))
    return "; ".join(parts)

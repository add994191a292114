"""Summaries of run.json and mysql.json for the report: targets, host, event, MySQL facts, placement."""

from __future__ import annotations

from typing import Any, Mapping

from .. import __version__

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
_TARGET_KEYS = ("pid", "label", "comm", "exe", "version", "build_id", "threads", "cgroup", "cpus_allowed",
                "frame_pointers", "samples")
_HOST_KEYS = ("cpu_model", "microarch", "vendor", "nproc", "kernel", "hardware_pmu", "perf_version",
              "perf_event_paranoid", "pfm_pmu")


def _get(obj: Any, *path: str, default: Any = None) -> Any:
    for key in path:
        if not isinstance(obj, Mapping) or key not in obj:
            return default
        obj = obj[key]
    return obj


def _features_off(run: Mapping[str, Any]) -> list[dict[str, str]]:
    out = []
    for item in run.get("features_off") or []:
        if isinstance(item, Mapping):
            out.append({k: str(item.get(k) or "") for k in ("feature", "why", "fix")})
        else:
            out.append({"feature": str(item), "why": "", "fix": ""})
    return out


def event_names(profile: Any) -> tuple[str, str]:
    """(event asked for, event perf really recorded) from run.json, else a folded file's headers."""
    run = profile.run or {}
    record = run.get("record") if isinstance(run.get("record"), Mapping) else {}
    headers = _get(run, "source", "headers", default={}) or {}
    requested = str(record.get("event_requested") or headers.get("event_requested") or "")
    recorded = str(record.get("event_recorded") or run.get("event") or headers.get("event_recorded")
                   or headers.get("event") or requested)
    return requested, recorded


def summary(profile: Any, processes: list[str]) -> dict[str, Any]:
    """What was profiled, how, on what host, and what went wrong along the way."""
    run = profile.run or {}
    record = run.get("record") if isinstance(run.get("record"), Mapping) else {}
    host = run.get("host") if isinstance(run.get("host"), Mapping) else {}
    requested, recorded = event_names(profile)
    pause = host.get("pause") if isinstance(host.get("pause"), Mapping) else None
    targets = [{k: t.get(k) for k in _TARGET_KEYS}
               for t in run.get("targets") or [] if isinstance(t, Mapping)]
    warnings = [str(w) for w in run.get("warnings") or []]
    if requested and recorded and requested != recorded:
        text = f"perf recorded {recorded} instead of {requested}"
        if not any(text in w for w in warnings):
            warnings.insert(0, text + ": the shares are time on CPU, not cycles")
    return {
        "pmuprof_version": str(run.get("pmuprof_version") or __version__),
        "report_version": __version__,
        "source": profile.source,
        "command": [str(a) for a in run.get("command") or []],
        "started": run.get("started") or "",
        "duration_s": run.get("duration_s"),
        "interrupted": bool(run.get("interrupted")),
        "mode": run.get("mode") or "",
        "processes": processes,
        "targets": targets,
        "host": {k: host.get(k) for k in _HOST_KEYS},
        "pause": {"cycles": pause.get("cycles"), "ns": pause.get("ns")} if pause else None,
        "event_requested": requested,
        "event_recorded": recorded,
        "event_substituted": bool(requested and recorded and requested != recorded),
        "frequency": record.get("frequency"),
        "call_graph": record.get("call_graph") or "",
        "samples": profile.total,
        "samples_total": record.get("samples_total"),
        "lost": record.get("lost"),
        "unit": profile.unit,
        "perf_argv": [str(a) for a in record.get("argv") or []],
        "warnings": warnings,
        "features_off": _features_off(run),
        "server_version": _get(profile.mysql, "server", "version", default="") or "",
        "trigger": trigger_text(run.get("trigger")),
    }


def trigger_text(trigger: Any) -> str:
    """'Threads_running>=4 held for 3 polls (6, 6, 9) at …' for captures taken by `pmuprof watch`."""
    if not isinstance(trigger, Mapping) or not trigger.get("condition"):
        return ""
    condition = str(trigger["condition"])
    values = [p.get("values", {}).get(condition) for p in trigger.get("polls_before") or [] if isinstance(p, Mapping)]
    shown = ", ".join(f"{v:g}" for v in values[-int(trigger.get("consecutive_hits") or 3):] if isinstance(v, (int, float)))
    text = f"{condition} held for {trigger.get('consecutive_hits', '?')} polls"
    return text + (f" ({shown})" if shown else "") + (f" at {trigger['fired_at']}" if trigger.get("fired_at") else "")


def _semaphores(sem: Any) -> dict[str, Any] | None:
    if not isinstance(sem, Mapping):
        return None
    latches = []
    for kind, vals in sorted((sem.get("latches") or {}).items()):
        if isinstance(vals, Mapping) and vals:
            latches.append({"kind": kind, **{k: vals.get(k) for k in ("spin_waits", "rounds", "os_waits")}})
    return {
        "empty": bool(sem.get("empty")),
        "os_wait_array": dict(sem.get("os_wait_array") or {}),
        "latches": latches,
        "spin_rounds_per_wait": dict(sem.get("spin_rounds_per_wait") or {}),
    }


def mysql_facts(mysql: Mapping[str, Any] | None) -> dict[str, Any]:
    """Server version, spin variables, SEMAPHORES, processlist states and what could not be read."""
    if not mysql:
        return {"reachable": False, "error": "no mysql.json in this input (bare perf data or folded file)", "missing": []}
    if not mysql.get("reachable", True):
        return {"reachable": False, "error": str(mysql.get("error") or "server not reachable"),
                "missing": [str(m) for m in mysql.get("missing") or []]}
    variables = mysql.get("variables") or {}
    plist = mysql.get("processlist") or {}
    states = sorted((plist.get("states") or {}).items(), key=lambda kv: (-int(kv[1] or 0), str(kv[0])))
    status = mysql.get("status") or {}
    threads_running = [_get(status, "before", "Threads_running"), _get(status, "after", "Threads_running")]
    return {
        "reachable": True,
        "source": str(mysql.get("source") or ""),
        "version": _get(mysql, "server", "version", default="") or "",
        "version_comment": _get(mysql, "server", "version_comment", default="") or "",
        "family": _get(mysql, "server", "family", default="") or "",
        "variables": [[name, str(variables[name])] for name in SPIN_VARIABLES if name in variables],
        "semaphores": _semaphores(mysql.get("semaphores")),
        "threads": plist.get("threads"),
        "states": [[str(k), v] for k, v in states],
        "threads_running": [v for v in threads_running if v is not None],
        "error_log": {k: (mysql.get("error_log") or {}).get(k) for k in ("path", "memory_barrier", "line")},
        "my_cpu_relax_multiplier": mysql.get("my_cpu_relax_multiplier"),
        "missing": [str(m) for m in mysql.get("missing") or []],
    }


def target_for(run: Mapping[str, Any], label: str) -> Mapping[str, Any]:
    """run.json's target whose label (or comm, or 'comm-pid') is this process root frame."""
    for target in run.get("targets") or []:
        if not isinstance(target, Mapping):
            continue
        names = {str(target.get("label") or ""), str(target.get("comm") or ""),
                 f"{target.get('comm')}-{target.get('pid')}", f"{target.get('label')}-{target.get('pid')}"}
        if label in names:
            return target
    return {}


def numa_text(target: Mapping[str, Any]) -> str:
    """'CPUs 0-15 (node 0); memory node0 80 %, node1 20 %' from a run.json target."""
    numa = target.get("numa") if isinstance(target.get("numa"), Mapping) else {}
    parts = []
    if target.get("cpus_allowed"):
        nodes = ",".join(str(n) for n in numa.get("cpu_nodes") or [])
        parts.append(f"CPUs {target['cpus_allowed']}" + (f" (node {nodes})" if nodes else ""))
    mem = numa.get("memory_nodes") if isinstance(numa.get("memory_nodes"), Mapping) else {}
    total = sum(float(v or 0) for v in mem.values())
    if total:
        parts.append("memory " + ", ".join(
            f"node{k} {100.0 * float(v or 0) / total:.0f} %" for k, v in sorted(mem.items())))
    return "; ".join(parts)

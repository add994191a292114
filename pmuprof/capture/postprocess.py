"""After perf stops: what was really recorded, fold stacks, counters, server facts, skid → run directory."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Callable

from ..errors import PmuprofError
from ..model import rundir
from ..model.folded import save_folded
from ..model.labels import is_unnamed
from ..tools.perf import parse as perfparse, read as script
from ..analysis import unnamed

SOFTWARE_EVENTS = ("cpu-clock", "task-clock")


def calibrate_pause() -> dict | None:
    """PAUSE latency on this host from the native helper (None, with the reason, when it is off)."""
    try:
        from ..tools.native import helper
        return helper.calibrate_pause()
    except (ImportError, PmuprofError, AttributeError) as err:
        return {"error": str(err) or type(err).__name__}


def check_event(run: dict, perf: str, data: Path) -> None:
    """perf may silently substitute cpu-clock for cycles on hosts without a PMU: say so."""
    events = script.recorded_events(perf, data)
    names = [perfparse.event_base(e["name"]) for e in events if not e["name"].startswith("dummy")]
    recorded = names[0] if names else "unknown"
    run["record"]["event_recorded"] = recorded
    run["record"]["events_recorded"] = [e["name"] for e in events]
    asked = perfparse.event_base(run["record"]["event_requested"])
    if recorded != asked:
        run["warnings"].append(
            f"perf recorded {recorded} instead of {asked}: no usable hardware PMU on this host (a VM without a "
            f"vPMU?). Function shares are time-based and still right; cycle/IPC facts are unavailable")
        run["features_off"].append({"feature": "hardware cycles sampling", "why": f"perf substituted {recorded}",
                                    "fix": "run on bare metal or enable the vPMU (e.g. KVM `-cpu host,pmu=on`)"})


def fold(run: dict, opts, perf: str, data: Path) -> None:
    pids = tuple(t["pid"] for t in run["targets"])
    labels = {t["pid"]: t["label"] for t in run["targets"]}
    result, argv = script.fold_perf_data(perf, data, pids, per_thread=opts.per_thread_roots, names=labels,
                                         raw_unknown=True)
    run["script"] = {"argv": argv}
    group_unnamed(run, opts, result)
    run["record"]["samples"] = result.kept
    run["warnings"].extend(result.warnings())
    by_root = Counter()
    for stack, count in result.stacks.items():
        by_root[stack[0]] += count
    for tgt in run["targets"]:
        tgt["samples"] = by_root.get(tgt["label"], 0)
    if not result.kept:
        run["warnings"].append("no samples of the target were recorded: it was idle (or off-CPU) during the "
                               "capture; try a longer --duration while the problem is happening")
    headers = {"pmuprof_version": run["pmuprof_version"], "event": run["record"].get("event_recorded", ""),
               "frequency_hz": f"{opts.frequency} Hz", "mode": opts.mode, "unit": "samples",
               "targets": " ".join(f"{t['label']}={t['pid']}" for t in run["targets"])}
    save_folded(opts.out_dir / rundir.STACKS, result.stacks, headers)
    rundir.write_leaves(opts.out_dir / rundir.LEAVES, result.leaves)


def group_unnamed(run: dict, opts, result) -> None:
    """Unnamed frames (stripped binaries) → one frame per .eh_frame function, labelled by address."""
    def lookup(path: str, vaddrs: list[int]) -> dict:
        from ..tools.native import helper
        return helper.funcs(path, vaddrs)

    stacks, table, reason = unnamed.resolve(result.stacks, unnamed.binary_paths(run["targets"]), lookup)
    result.stacks = Counter(stacks)
    if reason:
        run["features_off"].append({"feature": "grouping unnamed code into functions", "why": reason,
                                    "fix": "build the native helper (libdw-dev libelf-dev libcapstone-dev)"})
    if table:
        rundir.write_json(opts.out_dir / rundir.SYMBOLS, {"unnamed_functions": table})
        total = sum(result.stacks.values()) or 1
        unnamed_self = sum(c for s, c in result.stacks.items() if is_unnamed(s[-1]))
        run["symbols"] = {"unnamed_functions": len(table), "unnamed_self_share": round(unnamed_self / total, 4),
                          "pause_functions_hot": sum(1 for r in table if r["contains_pause"])}


def counters(run: dict, opts, stat_out: Path) -> None:
    rows = perfparse.parse_stat_csv(stat_out.read_text(errors="replace")) if stat_out.exists() else []
    labels = run.get("stat", {}).get("labels", {})
    for row in rows:  # curated PMU events are named (pause_inst, remote_dram, ...); perf's spelling is kept
        name = labels.get(row["event"].split(":")[0])
        if name and name != row["event"]:
            row["perf"], row["event"] = row["event"], name
    scope = f"cgroup {run['cgroup']}" if run.get("cgroup") else (
        "system-wide (all processes)" if opts.mode == "per-cpu" else "target threads")
    data = {"scope": scope, "duration_s": run["duration_s"], "events": rows, "derived": perfparse.derived(rows)}
    if not any(r["supported"] and r["event"].split(":")[0] in ("cycles", "instructions") for r in rows):
        run["features_off"].append({"feature": "IPC (cycles, instructions)", "why": "no hardware PMU counters here",
                                    "fix": "run on bare metal or a VM with a virtual PMU"})
    rundir.write_json(opts.out_dir / rundir.COUNTERS, data)


def server_facts(run: dict, opts, worker) -> None:
    if worker is None:
        return
    worker.join(timeout=30)
    facts = worker.facts or {"reachable": False, "error": "server facts timed out"}
    if not facts.get("reachable"):
        run["warnings"].append(f"server facts not collected: {facts.get('error')}")
    rundir.write_json(opts.out_dir / rundir.MYSQL, facts)


def skid(run: dict, opts) -> None:
    """Skid-corrected instruction histograms of the hottest functions (needs the native helper)."""
    try:
        from ..analysis import skid as skidmod
    except ImportError:
        return
    try:
        result = skidmod.correct_run(opts.out_dir, run)
    except (PmuprofError, OSError) as err:
        run["features_off"].append({"feature": "skid correction", "why": str(err),
                                    "fix": "build the native helper: apt-get install libcapstone-dev libdw-dev "
                                           "libelf-dev libpfm4-dev, then reinstall pmuprof"})
        return
    if result is not None:
        rundir.write_json(opts.out_dir / rundir.SKID, result.get("functions", result))
        run["skid"] = result.get("summary", {})


def finish(opts, perf: str, run: dict, stat_out: Path, mysql_worker, log: Callable[[str], None]) -> None:
    """Turn the raw recording into the run directory; each step keeps going when a later one fails."""
    data = opts.out_dir / rundir.PERF_DATA
    try:
        check_event(run, perf, data)
        log("folding stacks")
        fold(run, opts, perf, data)
    finally:
        counters(run, opts, stat_out)
        server_facts(run, opts, mysql_worker)
        rundir.write_json(opts.out_dir / rundir.RUN_JSON, run)
    skid(run, opts)
    if not opts.keep_perf_data:
        data.unlink(missing_ok=True)
    rundir.write_json(opts.out_dir / rundir.RUN_JSON, run)

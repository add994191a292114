"""Off-CPU tracing overhead on a real MariaDB: sysbench TPS/p95 and the longest SELECT 1, without vs with
each mechanism (pmuprof-offcpu BPF, a bpftrace script, perf record -e sched:sched_switch), A B A B pairs."""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import overhead as ov  # noqa: E402
from tests import mariadb as mdb  # noqa: E402

WORK = ROOT / "benchmarks" / "work"
MODES = ("bpf", "bpf-before", "bpftrace", "perf-sched")
LOADS = {"point_select": ("oltp_point_select", 4, 10000), "hot_updates": ("oltp_update_non_index", 1, 20)}
STOP_LIMIT_S = 120.0  # a tracer still writing its output this long after SIGINT is killed (and said)
READY = {"bpf": "attached", "bpf-before": "attached", "bpftrace": "Attaching"}  # output once the tracer is attached

# The same off-CPU sum as pmuprof-offcpu, as bpftrace 0.17 can write it (stacks as map values).
BPFTRACE = """
tracepoint:sched:sched_switch {
  if (pid == %(pid)d) { @start[tid] = nsecs; @k[tid] = kstack; @u[tid] = ustack; @st[tid] = args->prev_state; }
  $n = args->next_pid; $s = @start[$n];
  if ($s) { @off[@k[$n], @u[$n], @st[$n]] = sum(nsecs - $s); delete(@start[$n]); }
}
"""


def tracer_argv(mode: str, pid: int, out: Path) -> list[str]:
    """The exact command each mode runs while sysbench runs."""
    if mode in ("bpf", "bpf-before"):  # bpf-before: another build (PMUPROF_OFFCPU_BEFORE), e.g. main's, side by side
        binary = os.environ.get("PMUPROF_OFFCPU_BEFORE" if mode == "bpf-before" else "PMUPROF_OFFCPU")
        return [
            binary or str(ROOT / "native" / "build" / "pmuprof-offcpu"),
            "--pid",
            str(pid),
            "--duration",
            "600",
            "--out",
            str(out / "offcpu.out"),
        ]
    if mode == "bpftrace":
        return ["bpftrace", "-e", BPFTRACE % {"pid": pid}]
    if mode == "perf-sched":
        return ["perf", "record", "-a", "-e", "sched:sched_switch", "-g", "-o", str(out / "perf.data")]
    raise ValueError(mode)


def _wait_ready(proc: subprocess.Popen, mode: str, err: Path, out: Path) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < 120:
        if proc.poll() is not None:
            raise RuntimeError(f"{mode} exited: {err.read_text()[-500:]}")
        text = "".join(f.read_text(errors="replace") for f in (err, out / "stdout") if f.exists())
        if mode in READY and READY[mode] in text:
            return time.monotonic() - t0
        if mode == "perf-sched" and (out / "perf.data").exists() and time.monotonic() - t0 > 1.0:
            return time.monotonic() - t0
        time.sleep(0.05)
    raise RuntimeError(f"{mode} did not attach in 120 s")


def bpf_progs() -> list[dict]:
    return json.loads(subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True, text=True).stdout or "[]")


def bpf_prog_stats(before: set[int]) -> dict:
    """run_cnt and run_time_ns of the BPF programs loaded since ``before`` (the tracer's: nothing else on this
    host loads BPF programs; needs kernel.bpf_stats_enabled=1)."""
    mine = [p for p in bpf_progs() if p["id"] not in before]
    # the sched_switch program's runs = context switches (lazy mode adds one at the end of __schedule)
    switch = [p.get("run_cnt", 0) for p in mine if p.get("name") in ("on_switch", "sched_switch")]
    return {
        "runs": sum(p.get("run_cnt", 0) for p in mine),
        "ns": sum(p.get("run_time_ns", 0) for p in mine),
        "switch_runs": sum(switch) if switch else max((p.get("run_cnt", 0) for p in mine), default=0),
        "progs": [p.get("name", "") for p in mine],
    }


def proc_cpu_s(pid: int) -> float:
    """utime + stime of a process (all its threads) in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _set_bpf_stats(on: bool) -> None:
    Path("/proc/sys/kernel/bpf_stats_enabled").write_text("1" if on else "0")


def one_run(server: mdb.MariaDB, mode: str, load: str, seconds: float, threads: int, stats: bool = False) -> dict:
    test, tables, size = LOADS[load]
    stats = stats and mode in READY
    out = WORK / f"offcpu-{mode}-{time.monotonic_ns()}"
    out.mkdir(parents=True)
    pinger = ov.Pinger(server)
    pinger.start()
    proc, extra = None, {}
    try:
        if stats:
            _set_bpf_stats(True)
            before = {p["id"] for p in bpf_progs()}
        if mode != "baseline":
            t0 = time.monotonic()
            proc = subprocess.Popen(
                tracer_argv(mode, server.pid, out),
                stdout=open(out / "stdout", "wb"),
                stderr=open(out / "stderr", "wb"),
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            extra["attach_s"] = round(_wait_ready(proc, mode, out / "stderr", out), 3)
        begin = time.monotonic()
        server_cpu, child_cpu = proc_cpu_s(server.pid), children_cpu_s()
        result = mdb.run_sysbench(server, seconds, test, threads, tables=tables, table_size=size)
        server_cpu, child_cpu = proc_cpu_s(server.pid) - server_cpu, children_cpu_s() - child_cpu
        if stats:
            cost = bpf_prog_stats(before)
            wall = time.monotonic() - t0
            extra.update(
                bpf_progs=cost["progs"],
                bpf_runs_per_s=round(cost["runs"] / wall),
                bpf_ns_per_run=round(cost["ns"] / max(cost["runs"], 1)),
                bpf_cpu_pct=round(100 * cost["ns"] / (wall * 1e9 * (os.cpu_count() or 1)), 3),
            )
        reaped = children_cpu_s()  # sysbench's CPU is in already
        txns = result.tps * seconds
        extra["server_cpu_us_per_txn"] = round(server_cpu * 1e6 / txns, 2) if txns else None
        extra["sysbench_cpu_us_per_txn"] = round(child_cpu * 1e6 / txns, 2) if txns else None
        if proc is not None:
            stop_at = time.monotonic()
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(timeout=STOP_LIMIT_S)
                extra["stop_s"] = round(time.monotonic() - stop_at, 3)
            except subprocess.TimeoutExpired:  # bpftrace symbolising its maps on a loaded host: minutes
                extra["stop_s"], extra["stop_killed"] = STOP_LIMIT_S, True
            extra["tracer_total_s"] = round(time.monotonic() - t0, 2)
            extra["tracer_cpu_s"] = round(children_cpu_s() - reaped, 3)
            extra["output_bytes"] = sum(f.stat().st_size for f in out.iterdir() if f.is_file())
        time.sleep(0.2)
        extra["worst_ping_ms"] = round(pinger.worst_between(begin - 5, time.monotonic()) * 1000, 2)
    finally:
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        pinger.stop.set()
        pinger.join(timeout=10)
        if stats:
            _set_bpf_stats(False)
        shutil.rmtree(out, ignore_errors=True)
    load1 = float(Path("/proc/loadavg").read_text().split()[0])
    return {
        "mode": mode,
        "load": load,
        "tps": result.tps,
        "p95_ms": result.p95_ms,
        "errors": result.errors,
        "load1": load1,
        **extra,
    }


def summarize(runs: list[dict]) -> dict:
    out: dict = {}
    for load in LOADS:
        for mode in MODES:
            pairs = [
                (runs[i - 1], r)
                for i, r in enumerate(runs)
                if r["mode"] == mode and r["load"] == load and runs[i - 1]["mode"] == "baseline"
            ]
            if not pairs:
                continue
            out[f"{load}/{mode}"] = {
                "pairs": len(pairs),
                "tps_ratio": ov.spread([b["tps"] / a["tps"] for a, b in pairs]),
                "p95_ratio": ov.spread([b["p95_ms"] / a["p95_ms"] for a, b in pairs]),
                "baseline_tps": ov.spread([a["tps"] for a, _ in pairs]),
                "worst_ping_ms": ov.spread([b["worst_ping_ms"] for _, b in pairs]),
                "baseline_worst_ping_ms": ov.spread([a["worst_ping_ms"] for a, _ in pairs]),
                "server_cpu_per_txn_ratio": ov.spread(
                    [b["server_cpu_us_per_txn"] / a["server_cpu_us_per_txn"] for a, b in pairs]
                ),
                "sysbench_cpu_per_txn_ratio": ov.spread(
                    [b["sysbench_cpu_us_per_txn"] / a["sysbench_cpu_us_per_txn"] for a, b in pairs]
                ),
                "baseline_server_cpu_us_per_txn": ov.spread([a["server_cpu_us_per_txn"] for a, _ in pairs]),
                "tracer_cpu_s": ov.spread([b["tracer_cpu_s"] for _, b in pairs]),
                "attach_s": ov.spread([b["attach_s"] for _, b in pairs]),
                "stop_s": ov.spread([b["stop_s"] for _, b in pairs]),
                "stop_killed": sum(1 for _, b in pairs if b.get("stop_killed")),
                "output_bytes": ov.spread([b["output_bytes"] for _, b in pairs]),
            }
    return out


def markdown(summary: dict) -> str:
    lines = [
        "| load / mode | pairs | TPS ratio min / median / max | p95 ratio median | server CPU per txn ratio "
        "min / median / max | tracer CPU s | worst SELECT 1 ms (median, max) with / without | attach s | "
        "stop+dump s | output |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key, s in summary.items():
        t, c = s["tps_ratio"], s["server_cpu_per_txn_ratio"]
        lines.append(
            f"| {key} | {s['pairs']} | {t['min']:.3f} / {t['median']:.3f} / {t['max']:.3f} | "
            f"{s['p95_ratio']['median']:.3f} | {c['min']:.3f} / {c['median']:.3f} / {c['max']:.3f} | "
            f"{s['tracer_cpu_s']['median']:.2f} | {s['worst_ping_ms']['median']:.0f}, "
            f"{s['worst_ping_ms']['max']:.0f} / {s['baseline_worst_ping_ms']['median']:.0f}, "
            f"{s['baseline_worst_ping_ms']['max']:.0f} | {s['attach_s']['median']:.2f} | "
            f"{s['stop_s']['median']:.2f} | {s['output_bytes']['median'] / 1024:.0f} KiB |"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--loads", default=",".join(LOADS))
    ap.add_argument("--out", type=Path, default=WORK / "offcpu_overhead.json")
    ap.add_argument(
        "--bpf-stats",
        action="store_true",
        help="measure the BPF programs' own run time (kernel.bpf_stats_enabled, restored after)",
    )
    args = ap.parse_args()
    if os.geteuid() != 0 or mdb.missing_tools():
        print("offcpu_overhead: needs root, mariadb-server, sysbench, PyMySQL", file=sys.stderr)
        return 2
    modes, loads = [m for m in args.modes.split(",") if m], [x for x in args.loads.split(",") if x]
    WORK.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    server = mdb.start_mariadb()
    runs: list[dict] = []
    try:
        mdb.sysbench_prepare(server, 4, 10000)
        mdb.run_sysbench(server, 8, "oltp_point_select", args.threads, tables=4, table_size=10000)  # warm-up
        for i in range(args.pairs):
            for load in loads:
                for mode in modes:
                    for m in ("baseline", mode):
                        runs.append(one_run(server, m, load, args.seconds, args.threads, args.bpf_stats))
                        print(f"pair {i + 1}/{args.pairs} {json.dumps(runs[-1])}", file=sys.stderr, flush=True)
    finally:
        mdb.stop_mariadb(server)
    summary = summarize(runs)
    args.out.write_text(
        json.dumps({"meta": vars(args) | {"out": str(args.out)}, "summary": summary, "runs": runs}, indent=2) + "\n"
    )
    print(markdown(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())

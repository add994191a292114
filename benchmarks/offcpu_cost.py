"""In-kernel cost of off-CPU tracers per sched_switch on a loaded MariaDB (kernel.bpf_stats_enabled run time).

usage: python3 benchmarks/offcpu_cost.py [--rounds 3] [--no-bpftrace] ["NAME=PATH_TO_PMUPROF_OFFCPU [ARG...]" ...]
e.g. the wake-up hook's cost: ... --no-bpftrace "wakeup=native/build/pmuprof-offcpu"
     "no-wakeup=native/build/pmuprof-offcpu --no-wakeup"
Each tracer runs 6.5 s beside sysbench oltp_point_select (16 threads); its programs' run_cnt and
run_time_ns are read 1.5 s and 6.5 s after the start. bpftrace (the same sum, as a script) is included.
ns_per_run is per program run (any sched_switch on the host, and in lazy mode any end of __schedule
too); ns_per_switch is all the tracer's programs' time over the sched_switch program's runs, the cost
per context switch whatever the number of programs. Another tracer loaded meanwhile (any BPF program
loaded after the start is counted) makes "progs" list more than the tracer's own. At the end: each tracer's
median ns_per_switch over the rounds, and its ratio to the first tracer's in the same rounds (median of the
per-round ratios).
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import offcpu_overhead as oo  # noqa: E402
from pmuprof.tools.native import offcpu as tracer_output  # noqa: E402
from tests import mariadb as mdb  # noqa: E402

OUT = Path("/tmp/offcpu_cost.out")


def coverage(path: Path) -> dict:
    """From a lazy-mode output: switch-ins that took stacks, and the off-CPU time kept with stacks."""
    try:
        out = tracer_output.load(path)
    except (OSError, ValueError):
        return {}
    short_ns = sum(w.ns for w in out.waits if w.short)
    total_ns = sum(w.ns for w in out.waits if w.state != "B")
    long_n, short_n = out.stats.get("long", 0), out.stats.get("short", 0)
    return {
        "mode": out.mode,
        "stacks_per_s": round(long_n / max((out.end_ns - out.t0_ns) / 1e9, 1e-9)),
        "blocks_with_stacks": round(long_n / max(long_n + short_n, 1), 3) if out.mode == "lazy" else 1.0,
        "time_with_stacks": round(1 - short_ns / max(total_ns, 1), 3),
    }


def measure(argv: list[str]) -> dict:
    oo._set_bpf_stats(True)
    try:
        before = {p["id"] for p in oo.bpf_progs()}
        OUT.unlink(missing_ok=True)
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            time.sleep(1.5)
            s0, t0 = oo.bpf_prog_stats(before), time.monotonic()
            time.sleep(5)
            s1, t1 = oo.bpf_prog_stats(before), time.monotonic()
        finally:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    finally:
        oo._set_bpf_stats(False)
    runs, ns = s1["runs"] - s0["runs"], s1["ns"] - s0["ns"]
    switches = s1["switch_runs"] - s0["switch_runs"]
    return {
        "runs_per_s": round(runs / (t1 - t0)),
        "ns_per_run": round(ns / max(runs, 1)),
        "ns_per_switch": round(ns / max(switches, 1)),
        "switches_per_s": round(switches / (t1 - t0)),
        "cpu_pct_of_host": round(100 * ns / ((t1 - t0) * 1e9 * (os.cpu_count() or 1)), 2),
        "progs": s1["progs"],
        **(coverage(OUT) if argv[0] != "bpftrace" else {}),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-bpftrace", action="store_true")
    ap.add_argument("tracers", nargs="*", help="'NAME=PATH [ARG...]' of pmuprof-offcpu builds (and options) to compare")
    args = ap.parse_args()
    tracers = dict(t.split("=", 1) for t in args.tracers) or {
        "pmuprof-offcpu": str(ROOT / "native/build/pmuprof-offcpu")
    }
    server = mdb.start_mariadb()
    try:
        mdb.sysbench_prepare(server, 4, 10000)
        load = mdb.SysbenchLoad(server, 60 * args.rounds * (len(tracers) + 1), "oltp_point_select", 16, 4, 10000)
        try:
            time.sleep(3)
            per: dict[str, list[int]] = {}
            for rnd in range(args.rounds):
                for name, path in [*tracers.items(), *([] if args.no_bpftrace else [("bpftrace", "")])]:
                    argv = (
                        [
                            path.split()[0],
                            "--pid",
                            str(server.pid),
                            "--duration",
                            "60",
                            "--out",
                            str(OUT),
                            *path.split()[1:],
                        ]
                        if path
                        else ["bpftrace", "-e", oo.BPFTRACE % {"pid": server.pid}]
                    )
                    got = measure(argv)
                    per.setdefault(name, []).append(got["ns_per_switch"])
                    print(
                        f"round {rnd + 1} {name:16s} {got} load1 {Path('/proc/loadavg').read_text().split()[0]}",
                        flush=True,
                    )
        finally:
            load.stop()
    finally:
        mdb.stop_mariadb(server)
    summarize(per)
    return 0


def summarize(per: dict[str, list[int]]) -> None:
    """Median ns per switch of each tracer, and the median of its per-round ratios to the first tracer's."""
    first = next(iter(per.values()), [])
    for name, values in per.items():
        ratios = [v / f for v, f in zip(values, first) if f]
        print(
            f"{name:16s} ns_per_switch median {statistics.median(values):.0f} (min {min(values)}, max {max(values)})"
            + (
                f"; ratio to the first, median of {len(ratios)} rounds: {statistics.median(ratios):.2f}"
                if ratios
                else ""
            ),
            flush=True,
        )


if __name__ == "__main__":
    sys.exit(main())

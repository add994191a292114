"""What collecting the server's counters costs the server (capture/mysql/status.py), on a private MariaDB 10.11
(Debian's mariadbd, started by tests/mariadb.py):

1. the server's CPU per poll (one poll = what the status source sends each second: the whole global status
   and the INNODB_METRICS counters), from /proc/PID/stat over many polls back to back, with 1 and with
   --idle connections open (the status sum walks every connection);
2. sysbench's throughput and latency without (A) and with (B) the source polling once a second, runs
   alternated A B B A ..., each ratio B/A from one adjacent pair; and the source's own read latency then;
3. within one loaded run: a probe connection's point-select latency in periods with the source polling
   against periods without it, alternated every few seconds (same run, same load: the host's drift cancels).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pymysql  # noqa: E402

from pmuprof.capture.lifecycle import Context  # noqa: E402
from pmuprof.capture.mysql.connect import MysqlOptions  # noqa: E402
from pmuprof.capture.mysql.status import ServerCounters  # noqa: E402
from pmuprof.capture.options import RecordOptions  # noqa: E402
from pmuprof.model import rundir  # noqa: E402
from pmuprof.model.run import Run  # noqa: E402
from tests import mariadb as mdb  # noqa: E402

TABLES, TABLE_SIZE = 4, 10000
HZ = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of the whole process (every thread), in seconds."""
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rfind(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / HZ


def context(server: mdb.MariaDB, out: Path) -> Context:
    opts = MysqlOptions(socket=str(server.socket), user="root")
    return Context(RecordOptions(pids=(server.pid,), out_dir=out, mysql_options=opts), (server.pid,), Run())


def cpu_per_poll(server: mdb.MariaDB, polls: int, idle: int) -> dict:
    """Server CPU and client latency per poll, ``polls`` back to back with ``idle`` more connections open."""
    conns = [pymysql.connect(unix_socket=str(server.socket), user="root", password="") for _ in range(idle)]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            ctx = context(server, Path(tmp))
            src = ServerCounters.of(ctx)
            src.open(ctx)
            try:
                lat = []
                cpu0, t0 = cpu_seconds(server.pid), time.monotonic()
                for _ in range(polls):
                    lat.append(src.read().ms)
                cpu1, t1 = cpu_seconds(server.pid), time.monotonic()
            finally:
                src.close()
        # the idle server's own background CPU over the same time is measured right after and subtracted
        bg0 = cpu_seconds(server.pid)
        time.sleep(t1 - t0)
        bg = cpu_seconds(server.pid) - bg0
        return {
            "idle_connections": idle,
            "polls": polls,
            "server_cpu_ms_per_poll": round(1000 * (cpu1 - cpu0 - bg) / polls, 3),
            "background_cpu_ms": round(1000 * bg, 1),
            "read_ms_median": round(statistics.median(lat), 3),
            "read_ms_p95": round(sorted(lat)[int(0.95 * len(lat))], 3),
            "tick_ms": round(1000 / HZ, 1),
        }
    finally:
        for c in conns:
            c.close()


def one_run(server: mdb.MariaDB, collect: bool, seconds: float, threads: int, test: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        ctx = context(server, Path(tmp))
        src = ServerCounters.of(ctx) if collect else None
        if src is not None:
            src.start(ctx)
            deadline = time.monotonic() + 10
            while src.polls < 1 and time.monotonic() < deadline:  # polling before the measured run starts
                time.sleep(0.05)
        cpu0 = cpu_seconds(server.pid)
        result = mdb.SysbenchLoad(server, seconds, test, threads, TABLES, TABLE_SIZE).wait()
        cpu = cpu_seconds(server.pid) - cpu0
        run = {"collect": collect, "tps": result.tps, "p95_ms": result.p95_ms, "errors": result.errors}
        run |= {"server_cpu_s": round(cpu, 2), "loadavg": os.getloadavg()[0]}
        if src is not None:
            part = src.stop(ctx)
            status = rundir.read_status(Path(tmp), [])
            took = [p.ms for p in status.polls] if status else []
            run |= {"polls": len(took), "warnings": list(part.warnings)}
            run |= {"read_ms_median": statistics.median(took) if took else None, "read_ms_max": max(took, default=None)}
        return run


def pairs(server: mdb.MariaDB, n: int, seconds: float, threads: int, test: str) -> list[dict]:
    """A B, B A, A B, ...: each pair's two runs back to back, the order alternating against drift."""
    out = []
    for i in range(n):
        order = (False, True) if i % 2 == 0 else (True, False)
        runs = {c: one_run(server, c, seconds, threads, test) for c in order}
        out.append({"pair": i, "without": runs[False], "with": runs[True]})
        a, b = runs[False], runs[True]
        print(
            f"pair {i}: TPS {a['tps']:.0f} -> {b['tps']:.0f} ({b['tps'] / a['tps']:.3f}), "
            f"p95 {a['p95_ms']:.2f} -> {b['p95_ms']:.2f} ms, reads {b.get('read_ms_median')} ms median, "
            f"load {a['loadavg']:.1f}",
            flush=True,
        )
    return out


def probe_selects(socket: str, ready, done, queue) -> None:
    """In a process of its own (no interpreter lock shared with the source): point selects in a loop until
    ``done``, then their (start, end) times on CLOCK_MONOTONIC into ``queue``."""
    conn = pymysql.connect(unix_socket=socket, user="root", password="", database="sbtest")
    times, i = [], 0
    ready.set()
    with conn.cursor() as cur:
        while not done.is_set():
            i = i % TABLE_SIZE + 1
            t0 = time.monotonic()
            cur.execute(f"SELECT c FROM sbtest1 WHERE id = {i}")
            cur.fetchall()
            times.append((t0, time.monotonic()))
    conn.close()
    queue.put(times)


def alternate(server: mdb.MariaDB, cycles: int, period: float, threads: int, test: str) -> dict:
    """A probe connection's point-select latency while sysbench runs, with the source polling in every other
    ``period`` seconds (each on-period a new source, as a capture starts one, with its InnoDB state at both
    ends; the order on/off alternates): the selects of the on-periods against those of the off-periods, one
    run, one load. The probe runs in a process of its own, as a client would."""
    import multiprocessing

    ready, done, queue = multiprocessing.Event(), multiprocessing.Event(), multiprocessing.Queue()
    worker = multiprocessing.Process(target=probe_selects, args=(str(server.socket), ready, done, queue), daemon=True)
    periods: list[tuple[bool, float, float]] = []
    reads: list[float] = []
    load = mdb.SysbenchLoad(server, cycles * 2 * period + 5, test, threads, TABLES, TABLE_SIZE)
    worker.start()
    ready.wait(30)
    try:
        for cycle in range(cycles):
            for on in (True, False) if cycle % 2 == 0 else (False, True):
                t0 = time.monotonic()
                if on:
                    with tempfile.TemporaryDirectory() as tmp:
                        ctx = context(server, Path(tmp))
                        src = ServerCounters.of(ctx)
                        src.start(ctx)
                        time.sleep(period)
                        src.stop(ctx)
                        status = rundir.read_status(Path(tmp), [])
                        reads += [p.ms for p in status.polls] if status else []
                else:
                    time.sleep(period)
                periods.append((on, t0, time.monotonic()))
    finally:
        done.set()
        times = queue.get(timeout=60)
        worker.join(10)
        load.stop()
    out: dict = {"cycles": cycles, "period_s": period, "reads": len(reads), "read_ms_median": statistics.median(reads)}
    for on in (True, False):
        lat = sorted(1000 * (b - a) for a, b in times if any(o == on and s <= a and b <= e for o, s, e in periods))
        out["on" if on else "off"] = {
            "n": len(lat),
            **{f"p{int(100 * f)}_ms": round(lat[min(len(lat) - 1, int(f * len(lat)))], 3) for f in (0.5, 0.95, 0.99)},
            "mean_ms": round(sum(lat) / len(lat), 3),
        }
    means = [_mean_ms(times, s, e) for _on, s, e in periods]
    ratios = [
        means[i + 1] / means[i] if periods[i][0] is False else means[i] / means[i + 1] for i in range(0, len(means), 2)
    ]
    out["mean_ratio_per_cycle"] = [round(r, 3) for r in ratios]
    out["mean_ratio"] = spread(ratios)
    return out


def _mean_ms(times: list[tuple[float, float]], start: float, end: float) -> float:
    lat = [b - a for a, b in times if start <= a and b <= end]
    return 1000 * sum(lat) / len(lat) if lat else float("nan")


def spread(values: list[float]) -> str:
    return f"{min(values):.3f} / {statistics.median(values):.3f} / {max(values):.3f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=6, help="without/with pairs (default 6)")
    ap.add_argument("--seconds", type=float, default=10.0, help="sysbench seconds per run")
    ap.add_argument("--threads", type=int, default=8, help="sysbench threads")
    ap.add_argument("--test", default="oltp_read_write", help="sysbench test")
    ap.add_argument("--polls", type=int, default=300, help="back-to-back polls for the CPU per poll")
    ap.add_argument("--idle", type=int, default=800, help="idle connections for the second CPU measurement")
    ap.add_argument("--cycles", type=int, default=10, help="on/off cycles of part 3")
    ap.add_argument("--period", type=float, default=6.0, help="seconds of each on or off period of part 3")
    ap.add_argument("--parts", default="cpu,pairs,alternate", help="which parts to run (comma list)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "status_cost.json")
    args = ap.parse_args()
    why = mdb.missing_tools()
    if why:
        print(f"status_cost: {why}", file=sys.stderr)
        return 2
    parts = set(args.parts.split(","))
    server = mdb.start_mariadb(extra_args=(f"--max-connections={args.idle + 100}",))
    doc: dict = {"args": vars(args) | {"out": str(args.out)}}
    try:
        doc["server"] = mdb.sql(server, "SELECT VERSION()")[0][0]
        if "cpu" in parts:
            doc["cpu_per_poll"] = [cpu_per_poll(server, args.polls, idle) for idle in (0, args.idle)]
            for row in doc["cpu_per_poll"]:
                print(f"CPU per poll: {row}", flush=True)
        mdb.sysbench_prepare(server, TABLES, TABLE_SIZE)
        mdb.SysbenchLoad(server, 10, args.test, args.threads, TABLES, TABLE_SIZE).wait()  # warm-up
        if "pairs" in parts:
            runs = doc["pairs"] = pairs(server, args.pairs, args.seconds, args.threads, args.test)
            tps = [p["with"]["tps"] / p["without"]["tps"] for p in runs]
            p95 = [p["with"]["p95_ms"] / p["without"]["p95_ms"] for p in runs]
            reads = [p["with"]["read_ms_median"] for p in runs if p["with"].get("read_ms_median") is not None]
            doc["summary"] = {"tps_ratio": spread(tps), "p95_ratio": spread(p95), "read_ms_median": spread(reads)}
            print(f"pairs (min / median / max): {doc['summary']}", flush=True)
        if "alternate" in parts:
            doc["alternate"] = alternate(server, args.cycles, args.period, args.threads, args.test)
            print(f"alternate: {doc['alternate']}", flush=True)
    finally:
        mdb.stop_mariadb(server)
        doc["loadavg_end"] = os.getloadavg()
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

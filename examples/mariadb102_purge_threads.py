"""Measure rules/srv-sys-mutex.yaml's fix on MariaDB 10.2.11: innodb_purge_threads 4 (default) vs 1.

    python3 examples/mariadb102_purge_threads.py [ROUNDS]       (root, after `sh bootstrap.sh test`)

innodb_purge_threads is static in 10.2, so each setting gets its own private server (the test
suite's tests/mariadb102.py). Per round and setting: oltp_write_only, 16 threads, 4 tables of
20,000 rows, default innodb_spin_wait_delay, ROUND_S seconds; `pmuprof capture` records
CAPTURE_S of it. Prints tps and pmuprof's srv-sys-mutex / spin shares per run, A B A B.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

import mariadb as mdb  # noqa: E402
import mariadb102 as m102  # noqa: E402

ROUND_S = 20
CAPTURE_S = 8
LOAD = dict(test="oltp_write_only", threads=16, tables=4, table_size=20000)


def measure(purge_threads: int, out: Path) -> str:
    server = m102.start_mariadb102((f"--innodb-purge-threads={purge_threads}",))
    try:
        mdb.sysbench_prepare(server, tables=LOAD["tables"], table_size=LOAD["table_size"])
        load = mdb.SysbenchLoad(server, ROUND_S, **LOAD)
        time.sleep(3)
        cap = subprocess.run(
            [
                sys.executable,
                "-m",
                "pmuprof",
                "capture",
                "-p",
                str(server.pid),
                "-d",
                str(CAPTURE_S),
                "-o",
                str(out),
                "--defaults-file",
                str(server.defaults_file),
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=600,
        )
        result = load.wait()
        load.stop()
    finally:
        mdb.stop_mariadb(server)
    if cap.returncode:
        return f"purge_threads={purge_threads}: capture failed: {cap.stderr.strip()[-200:]}"
    data = json.loads((out / "findings.json").read_text())
    srv = sum(r["share"] for r in data["latches"] if r["latch"] == "srv_sys_mutex")
    spin = next((f["share"] for f in data["findings"] if f["rule"] == "innodb-spin-wait"), 0.0)
    fired = next((f["severity"] for f in data["findings"] if f["rule"] == "srv-sys-mutex"), "quiet")
    return (
        f"innodb_purge_threads={purge_threads}  tps {result.tps:7.1f}  srv_sys->mutex {100 * srv:5.1f}% "
        f"(srv-sys-mutex {fired})  spin {100 * spin:5.1f}%"
    )


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    with tempfile.TemporaryDirectory(prefix="pmuprof-purge-") as tmp:
        for r in range(rounds):
            for purge_threads in (4, 1):
                print(measure(purge_threads, Path(tmp) / f"{r}-{purge_threads}"), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Real off-CPU captures of named wait scenarios on a private MariaDB (10.11 Debian or 10.2.11), for rule fixtures.

    sudo python3 benchmarks/offcpu_scenarios.py --server 10.11 --scenario row-lock -o /tmp/cap
    sudo python3 benchmarks/offcpu_scenarios.py --server 10.2 --scenario concurrency -d 8 -o /tmp/cap

Each scenario starts its own server (options below), makes the waits happen (SQL sessions and/or
sysbench), runs ``pmuprof capture -p PID --off-cpu`` while they last, and stops everything. The run
directory (stacks.folded, offcpu.folded, threads.json, findings.json, report.html) is what the
fixtures under tests/rules/fixtures/ were cut from (tests/rules/fixtures/OFFCPU.md lists which).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import mariadb as mdb  # noqa: E402
import mariadb102 as m102  # noqa: E402


@dataclass(frozen=True)
class Scenario:
    """Server options, sysbench tables to prepare, what runs during the capture, and why."""

    about: str
    server_args: tuple[str, ...] = ()
    tables: int = 2
    table_size: int = 10000
    load: tuple[str, int] | None = None  # sysbench test, threads
    sessions: str = ""  # a name in SESSIONS: SQL sessions that hold and wait on locks
    idle_connections: int = 4
    extra: dict = field(default_factory=dict)


SCENARIOS = {
    "row-lock": Scenario(
        "one session holds a row lock (SELECT ... FOR UPDATE, open transaction); three others wait for it",
        sessions="row_lock",
    ),
    "mdl": Scenario(
        "a long transaction has read a table; ALTER TABLE waits for its metadata lock and three "
        "SELECTs queue behind the ALTER",
        sessions="mdl",
    ),
    "redo": Scenario(
        "innodb_flush_log_at_trx_commit=1, 8 sysbench writers: commits wait for the redo fsync",
        ("--innodb-flush-log-at-trx-commit=1",),
        load=("oltp_write_only", 8),
    ),
    "binlog": Scenario(
        "binary log with sync_binlog=1, 16 sysbench writers: commits wait in the binlog group commit",
        ("--log-bin=mysql-bin", "--server-id=1", "--sync-binlog=1", "--innodb-flush-log-at-trx-commit=1"),
        load=("oltp_write_only", 16),
    ),
    "free-page": Scenario(
        "a 6 MiB buffer pool under 8 sysbench writers on 200,000 rows: threads wait for free pages",
        ("--innodb-buffer-pool-size=6M",),
        tables=1,
        table_size=200000,
        load=("oltp_update_non_index", 8),
    ),
    "contention": Scenario(
        "32 sysbench read-write threads on one 1,000-row table: latches contend",
        tables=1,
        table_size=1000,
        load=("oltp_read_write", 32),
    ),
    "concurrency": Scenario(
        "innodb_thread_concurrency=1 with 16 sysbench readers: threads queue for InnoDB",
        ("--innodb-thread-concurrency=1",),
        load=("oltp_read_only", 16),
    ),
    "table-cache": Scenario(
        "table_open_cache=10 with 16 readers over 64 tables: tables are reopened all the time",
        ("--table-open-cache=10",),
        tables=64,
        table_size=100,
        load=("oltp_point_select", 16),
    ),
    "cpu": Scenario(
        "64 sysbench point-select threads on this host's CPUs: runnable threads wait for a CPU",
        load=("oltp_point_select", 64),
    ),
    "idle": Scenario(
        "nothing runs: 16 connections wait for their clients, background threads sleep", idle_connections=16
    ),
}


def _connect(server: mdb.MariaDB):
    import pymysql

    return pymysql.connect(
        unix_socket=str(server.socket),
        user="root",
        password="",
        database="sbtest",
        autocommit=True,
        connect_timeout=5,
        read_timeout=300,
    )


def _blocked(conn, sql: str) -> threading.Thread:
    """Run a statement that will block, in a thread (its connection stays open afterwards)."""

    def run() -> None:
        try:
            with conn.cursor() as cur:
                cur.execute(sql)
                cur.fetchall()
        except Exception as err:  # noqa: BLE001 - a lock wait timeout ends the wait: say so
            print(f"session ended: {err}", file=sys.stderr)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def row_lock(server: mdb.MariaDB, conns: list) -> Callable[[], None]:
    mdb.sql(
        server,
        "DROP TABLE IF EXISTS sbtest.hot_row",
        "CREATE TABLE sbtest.hot_row (id INT PRIMARY KEY, v INT)",
        "INSERT INTO sbtest.hot_row VALUES (1, 0), (2, 0)",
    )
    holder = _connect(server)
    conns.append(holder)
    with holder.cursor() as cur:
        cur.execute("BEGIN")
        cur.execute("SELECT * FROM hot_row WHERE id = 1 FOR UPDATE")
    for _ in range(3):
        conns.append(_connect(server))
        _blocked(conns[-1], "UPDATE hot_row SET v = v + 1 WHERE id = 1")
    return lambda: holder.cursor().execute("COMMIT")


def mdl(server: mdb.MariaDB, conns: list) -> Callable[[], None]:
    mdb.sql(
        server,
        "DROP TABLE IF EXISTS sbtest.ddl_t",
        "CREATE TABLE sbtest.ddl_t (id INT PRIMARY KEY, v INT)",
        "INSERT INTO sbtest.ddl_t VALUES (1, 0)",
    )
    holder = _connect(server)
    conns.append(holder)
    with holder.cursor() as cur:
        cur.execute("BEGIN")
        cur.execute("SELECT * FROM ddl_t")
        cur.fetchall()
    conns.append(_connect(server))
    _blocked(conns[-1], "ALTER TABLE ddl_t ADD COLUMN c INT")
    time.sleep(0.5)
    for _ in range(3):
        conns.append(_connect(server))
        _blocked(conns[-1], "SELECT * FROM ddl_t")
    return lambda: holder.cursor().execute("COMMIT")


SESSIONS = {"row_lock": row_lock, "mdl": mdl}


def start_server(version: str, args: tuple[str, ...], workdir: Path) -> mdb.MariaDB:
    (workdir / "server").mkdir(parents=True, exist_ok=True)
    if version == "10.2":
        return m102.start_mariadb102(args, workdir=workdir / "server")
    return mdb.start_mariadb(args, workdir=workdir / "server")


def start_capture(server: mdb.MariaDB, duration: float, out: Path) -> subprocess.Popen:
    """pmuprof capture in the background; returns once the off-CPU tracer is attached."""
    argv = [
        sys.executable,
        "-m",
        "pmuprof",
        "capture",
        "-p",
        str(server.pid),
        "--off-cpu",
        "-d",
        str(duration),
        "-o",
        str(out),
        "--defaults-file",
        str(server.defaults_file),
    ]
    print("+", " ".join(argv), file=sys.stderr)
    proc = subprocess.Popen(argv, cwd=ROOT)
    log, deadline = out / "offcpu.log", time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if log.is_file() and "attached" in log.read_text(errors="replace"):
            return proc
        time.sleep(0.05)
    raise RuntimeError(f"the capture did not start (see {out})")


def run(version: str, name: str, duration: float, out: Path, workdir: Path) -> int:
    """Server up, load running, capture attached, then the sessions' waits begin (their whole stacks are seen)."""
    sc = SCENARIOS[name]
    server = start_server(version, sc.server_args, workdir)
    conns: list = []
    load = None
    try:
        if sc.load:
            mdb.sysbench_prepare(server, sc.tables, sc.table_size)
        for _ in range(sc.idle_connections):
            conns.append(_connect(server))
        if sc.load:
            test, threads = sc.load
            load = mdb.SysbenchLoad(server, duration + 30, test, threads, sc.tables, sc.table_size)
            time.sleep(3)  # past sysbench's connect and warm-up
        proc = start_capture(server, duration, out)
        release = SESSIONS[sc.sessions](server, conns) if sc.sessions else None
        code = proc.wait()
        if release:
            release()
        if load:
            load.stop()
        return code
    finally:
        for conn in conns:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - a connection the server already closed
                pass
        mdb.stop_mariadb(server)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", choices=("10.11", "10.2"), default="10.11")
    ap.add_argument("--scenario", choices=sorted(SCENARIOS), required=True)
    ap.add_argument("-d", "--duration", type=float, default=8.0)
    ap.add_argument("-o", "--out", type=Path, required=True)
    ap.add_argument("--workdir", type=Path, default=None, help="where the private server lives (default: a temp dir)")
    args = ap.parse_args()
    workdir = args.workdir or Path(f"/tmp/pmuprof-offcpu-{args.scenario}")
    print(f"{args.scenario}: {SCENARIOS[args.scenario].about}", file=sys.stderr)
    return run(args.server, args.scenario, args.duration, args.out, workdir)


if __name__ == "__main__":
    sys.exit(main())

"""Off-CPU capture on a real MariaDB with real lock waits: a row lock and a metadata lock (BPF; root only).

One capture with the tracer and one without (the stall baseline); the report of the first must name
both waits (rules offcpu-row-lock-wait and offcpu-mdl-wait), with their stacks and their time.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import mariadb as mdb
from pmuprof.capture.offcpu import tracer
from pmuprof.capture.record import RecordOptions, record
from pmuprof.findings.stackshare import OffCpuTime
from pmuprof.model import rundir
from pmuprof.model.folded import load_folded
from pmuprof.pipeline import report_input

HOLD_S = 3.0
CAPTURE_S = 12.0  # the hold, and a loaded host's delays around it, inside the window
STALL_LIMIT_S = 0.050


def _connect(server: mdb.MariaDB):
    import pymysql

    return pymysql.connect(
        unix_socket=str(server.socket),
        user="root",
        password="",
        database="sbtest",
        autocommit=True,
        connect_timeout=5,
        read_timeout=60,
    )


def _tid(conn) -> int:
    with conn.cursor() as cur:
        cur.execute("SELECT TID FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()")
        return int(cur.fetchone()[0])


def _running(server: mdb.MariaDB, conn_id: int, timeout: float = 600) -> float:
    """Once the server runs the connection's statement (the processlist shows it; it blocks right after):
    time.monotonic() then. ``timeout`` is a hang detector."""
    deadline = time.monotonic() + timeout
    while not mdb.sql(
        server, f"SELECT 1 FROM information_schema.PROCESSLIST WHERE ID = {conn_id} AND INFO IS NOT NULL"
    ):
        assert time.monotonic() < deadline, f"connection {conn_id}'s statement did not start in {timeout:g} s"
        time.sleep(0.02)
    return time.monotonic()


PINGER = """
import sys, time, pymysql
conn = pymysql.connect(unix_socket=sys.argv[1], user="root", autocommit=True)
with conn.cursor() as cur, open(sys.argv[2], "w") as out:
    while True:
        t0 = time.monotonic()
        cur.execute("SELECT 1")
        cur.fetchall()
        out.write(f"{t0} {time.monotonic() - t0}\\n")
        out.flush()
        time.sleep(0.002)
"""


class Pinger:
    """SELECT 1 in a loop in its own process (no GIL shared with the capture); (start, latency) per line."""

    def __init__(self, server: mdb.MariaDB, path: Path) -> None:
        self.path = path
        self.proc = subprocess.Popen([sys.executable, "-c", PINGER, str(server.socket), str(path)])

    def ready(self, timeout: float = 600) -> None:
        """Until the first SELECT 1 has come back (its line is written): connected and pinging. ``timeout`` is a
        hang detector."""
        deadline = time.monotonic() + timeout
        while not (self.path.is_file() and "\n" in self.path.read_text()):
            assert self.proc.poll() is None, f"the pinger exited ({self.proc.returncode}) before its first ping"
            assert time.monotonic() < deadline, f"the pinger answered no SELECT 1 in {timeout:g} s"
            time.sleep(0.05)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()

    def worst(self, a: float, b: float) -> float:
        """The longest SELECT 1 that was running at some point of [a, b] (time.monotonic, same clock)."""
        rows = [tuple(map(float, line.split())) for line in self.path.read_text().splitlines() if line.count(" ") == 1]
        return max((lat for t0, lat in rows if t0 <= b and t0 + lat >= a), default=0.0)


def _wait_for(ready: Path, timeout: float = 60) -> None:
    """Until the tracer says it is attached (offcpu.log), or perf has created its file."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready.is_file() and (ready.name != rundir.OFFCPU_LOG or "attached" in ready.read_text(errors="replace")):
            return
        time.sleep(0.05)
    raise AssertionError(f"the capture did not start: {ready}")


def _hold_and_wait(
    server: mdb.MariaDB, holder_sql: str, waiter_sql: str
) -> tuple[int, threading.Thread, object, object]:
    """The holder keeps a lock in an open transaction; the waiter's statement blocks on it (in a thread).

    Both connections stay open until the capture ends: a closed connection's thread would wait in the
    server's thread cache, on a futex too.
    """
    holder, waiter = _connect(server), _connect(server)
    with holder.cursor() as cur:
        cur.execute("BEGIN")
        cur.execute(holder_sql)
        cur.fetchall()
    tid = _tid(waiter)
    thread = threading.Thread(target=lambda: waiter.cursor().execute(waiter_sql), daemon=True)
    thread.start()
    return tid, thread, holder, waiter


def _lock_scenario(server: mdb.MariaDB, ready: Path, tids: dict[str, int], conns: list, waits: dict) -> None:
    """Once the capture runs: a row-lock wait and a metadata-lock wait, each held HOLD_S seconds."""
    _wait_for(ready)
    opened = time.monotonic()  # just after the window opened
    tids["row"], row_thread, row_holder, row_waiter = _hold_and_wait(
        server, "SELECT * FROM offcpu_rows WHERE id = 1 FOR UPDATE", "SELECT * FROM offcpu_rows WHERE id = 1 FOR UPDATE"
    )
    tids["mdl"], mdl_thread, mdl_holder, mdl_waiter = _hold_and_wait(
        server, "SELECT * FROM offcpu_mdl", "ALTER TABLE offcpu_mdl ADD COLUMN c INT"
    )
    conns += [row_holder, row_waiter, mdl_holder, mdl_waiter]
    running = {"row": _running(server, row_waiter.thread_id()), "mdl": _running(server, mdl_waiter.thread_id())}
    time.sleep(HOLD_S)
    committing = {}
    for name, holder in (("row", row_holder), ("mdl", mdl_holder)):
        committing[name] = time.monotonic()
        holder.cursor().execute("COMMIT")
    for name, thread in (("row", row_thread), ("mdl", mdl_thread)):
        thread.join(600)
        # the waiter thread's futex time in the window, on this clock: at least from its statement running to
        # the COMMIT sent; at most from the window's start (the server's thread cache had it waiting on a
        # futex until the connection came) to the statement's end (a loaded host stretches both)
        waits[name] = (committing[name] - running[name], time.monotonic() - opened)
    tids["done"] = 1


def _window_end(out: Path, off_cpu: bool) -> float:
    """When the capture's window ended, on time.monotonic's clock: when the tracer (or perf) wrote its file."""
    last = out / (rundir.OFFCPU_RAW if off_cpu else rundir.PERF_DATA)
    return last.stat().st_mtime - (time.time() - time.monotonic())


def _captured_waits(server: mdb.MariaDB, out: Path, pinger: Pinger, off_cpu: bool) -> tuple[dict, float]:
    """One capture with the lock scenario in it: (tids of the waiting threads, longest SELECT 1 meanwhile)."""
    mdb.sql(
        server,
        "DROP TABLE IF EXISTS sbtest.offcpu_rows",
        "DROP TABLE IF EXISTS sbtest.offcpu_mdl",
        "CREATE TABLE sbtest.offcpu_rows (id INT PRIMARY KEY, v INT) ENGINE=InnoDB",
        "INSERT INTO sbtest.offcpu_rows VALUES (1, 1), (2, 2)",
        "CREATE TABLE sbtest.offcpu_mdl (id INT PRIMARY KEY) ENGINE=InnoDB",
    )
    tids: dict[str, int] = {}
    conns: list = []
    waits: dict[str, tuple[float, float]] = {}
    ready = out / rundir.OFFCPU_LOG if off_cpu else out / rundir.PERF_DATA
    scenario = threading.Thread(target=_lock_scenario, args=(server, ready, tids, conns, waits), daemon=True)
    scenario.start()
    begin = time.monotonic()
    record(
        RecordOptions(
            pids=(server.pid,), out_dir=out, duration=CAPTURE_S, mysql=False, off_cpu=off_cpu, per_thread_roots=True
        )
    )  # on the main thread: it handles Ctrl-C
    scenario.join(600)
    for conn in conns:
        conn.close()
    assert set(tids) == {"row", "mdl", "done"}, tids
    tids.update({f"{name}_wait": bounds for name, bounds in waits.items()})
    return tids, pinger.worst(begin, _window_end(out, off_cpu))


@pytest.fixture(scope="module")
def lock_run(mariadb, tmp_path_factory):
    if tracer.unavailable([mariadb.pid])[0]:
        pytest.skip(tracer.unavailable([mariadb.pid])[0])
    base = tmp_path_factory.mktemp("offcpu-mdb")
    pinger = Pinger(mariadb, base / "pings.txt")
    try:
        pinger.ready()
        _, without = _captured_waits(mariadb, base / "perf-only", pinger, off_cpu=False)
        tids, during = _captured_waits(mariadb, base / "run", pinger, off_cpu=True)
    finally:
        pinger.stop()
        mdb.sql(mariadb, "DROP TABLE IF EXISTS sbtest.offcpu_rows", "DROP TABLE IF EXISTS sbtest.offcpu_mdl")
    run = rundir.read_run(base / "run")
    assert run.offcpu and run.offcpu.recorded, run.offcpu
    stacks, _ = load_folded(base / "run" / rundir.OFFCPU)
    report = report_input(base / "run", base / "run")
    return stacks, tids, {"without_tracer": without, "during": during}, report


def _thread_us(stacks, tid: int, *prefixes: str) -> int:
    """Microseconds of one thread's stacks holding a frame starting with each prefix (C++ names carry arguments)."""
    return sum(
        n
        for s, n in stacks.items()
        if len(s) > 1 and s[1].endswith(f"-{tid}") and all(any(f.startswith(p) for f in s) for p in prefixes)
    )


def _waited_on_futex(stacks, tid: int) -> int:
    return _thread_us(stacks, tid, "__x64_sys_futex_[k]", "off-cpu:S")


def test_row_lock_wait_has_its_time(lock_run):
    stacks, tids, _, _ = lock_run
    waited = _waited_on_futex(stacks, tids["row"])
    # the statement waited for the row lock (HOLD_S and the delays around it), in a condition variable
    # (futex), and then the thread went back to reading the next command (poll): not a futex
    low, high = _bounds(tids["row_wait"])
    assert low <= waited <= high, (waited, tids["row_wait"], _of_thread(stacks, tids["row"]))
    # the wait sits under the statement: glibc's futex wait keeps no frame pointer, the tracer finds the chain
    in_statement = _thread_us(stacks, tids["row"], "mysql_execute_command", "handler::", "__x64_sys_futex_[k]")
    assert in_statement >= low, _of_thread(stacks, tids["row"])
    assert _thread_us(stacks, tids["row"], "do_command", "vio_read", "off-cpu:S") > 0, "idle afterwards, named"


def test_metadata_lock_wait_has_its_time(lock_run):
    stacks, tids, _, _ = lock_run
    waited = _waited_on_futex(stacks, tids["mdl"])
    low, high = _bounds(tids["mdl_wait"])
    assert low <= waited <= high, (waited, tids["mdl_wait"], _of_thread(stacks, tids["mdl"]))
    mdl = _thread_us(stacks, tids["mdl"], "mysql_alter_table", "MDL_context::acquire_lock", "__x64_sys_futex_[k]")
    assert mdl >= low, _of_thread(stacks, tids["mdl"])


def _bounds(wait: tuple[float, float]) -> tuple[float, float]:
    """Microseconds the waiter thread can have slept on futexes in the window, from the test's clock (see
    _lock_scenario), 0.5 s either way for the statement's own work, the wake-up and this clock's lag."""
    return max(0.0, wait[0] - 0.5) * 1e6, (wait[1] + 0.5) * 1e6


def _of_thread(stacks, tid: int) -> list:
    return sorted(((n, s) for s, n in stacks.items() if s[1].endswith(f"-{tid}")), reverse=True)[:5]


def _stall_pair(server: mdb.MariaDB, base: Path, n: int) -> dict[str, float]:
    """One more pair of short captures, without the tracer then with it, a pinger running through both."""
    pinger = Pinger(server, base / f"pings-{n}.txt")
    try:
        worst = {}
        for name, off_cpu in (("without_tracer", False), ("during", True)):
            out = base / f"stall-{n}-{name}"
            begin = time.monotonic()
            record(RecordOptions(pids=(server.pid,), out_dir=out, duration=3.0, mysql=False, off_cpu=off_cpu))
            worst[name] = pinger.worst(begin, _window_end(out, off_cpu))
        return worst
    finally:
        pinger.stop()


def _stalled(stall: dict[str, float]) -> bool:
    # the longest of many SELECT 1s is the host's scheduling noise as much as the tracer's: at load 36 on 2 vCPUs
    # it was 36 ms without the tracer and 93 ms with it in one suite run (under 50 ms in three others); a stall
    # the tracer caused would be the tracer's own time, beyond both the limit and three times the host's noise
    return stall["during"] >= max(STALL_LIMIT_S, 3 * stall["without_tracer"])


def test_server_never_stalls(lock_run, mariadb, tmp_path):
    _, _, stall, _ = lock_run
    if stall["without_tracer"] >= STALL_LIMIT_S:
        pytest.skip(
            f"this host is too loaded to measure a {STALL_LIMIT_S * 1000:.0f} ms stall: SELECT 1 took "
            f"{stall['without_tracer'] * 1000:.0f} ms in the same capture without the tracer"
        )
    # one slow SELECT 1 is one event: on CI's loaded 2 vCPUs one took 209 ms during the tracer's capture and
    # 34 ms without it. A stall the tracer causes happens in every capture it makes; noise does not come back
    # on cue. So a pair over the bound is measured again, twice, and only a stall in every pair fails.
    pairs = [stall]
    while _stalled(pairs[-1]) and len(pairs) < 3:
        pairs.append(_stall_pair(mariadb, tmp_path, len(pairs)))
    for p in pairs:
        print(
            f"longest SELECT 1: {p['during'] * 1000:.1f} ms during an off-CPU capture, "
            f"{p['without_tracer'] * 1000:.1f} ms during the same capture without the tracer"
        )
    assert not all(_stalled(p) for p in pairs), pairs


def _finding(report, rule: str):
    found = {f.rule: f for f in report.findings}
    assert rule in found, f"{rule} did not fire: {[(f.rule, f.severity, round(f.share, 3)) for f in report.findings]}"
    return found[rule]


def _chains(ev) -> tuple:
    return ev.chains if isinstance(ev, OffCpuTime) else ()


def _waited_s(finding, *names: str) -> float:
    return sum(ev.seconds for n in names if isinstance(ev := finding.evidence.get(n), OffCpuTime))


def test_report_names_the_row_lock_wait_its_stack_and_time(lock_run):
    _, tids, _, report = lock_run
    f = _finding(report, "offcpu-row-lock-wait")
    # one waiter for the hold; Debian's 10.11 has no InnoDB symbols: the 'unnamed' shape carries it
    low, high = (b / 1e6 for b in _bounds(tids["row_wait"]))
    assert low <= _waited_s(f, "named", "unnamed") <= high, (f.evidence, tids["row_wait"])
    assert f.chain and "s asleep" in f.message and "row locks" in f.message, f.message
    frames = [fr for ev in ("named", "unnamed") for c in _chains(f.evidence.get(ev)) for fr in c.frames]
    assert any(fr.startswith(("lock_wait", "__futex_abstimed_wait_common")) for fr in frames), frames
    assert f.basis == "off-CPU time" and (f.confidence.blocked_s or 0) >= low


def test_report_names_the_metadata_lock_wait_its_stack_and_time(lock_run):
    _, tids, _, report = lock_run
    f = _finding(report, "offcpu-mdl-wait")
    low, high = (b / 1e6 for b in _bounds(tids["mdl_wait"]))
    assert low <= _waited_s(f, "ddl_wait") <= high, (f.evidence, tids["mdl_wait"])  # the ALTER behind the transaction
    assert f.chain[0].startswith(
        ("MDL_context::acquire_lock", "MDL_wait::timed_wait", "MDL_context::upgrade_shared_lock")
    )
    assert "DDL waiting for its exclusive lock" in f.message, f.message


def test_report_shows_wall_clock_and_threads(lock_run):
    *_, report = lock_run
    html = report.paths["html"].read_text(encoding="utf-8")
    assert 'id="wallclock"' in html and "[blocked: futex]" in html and 'id="offcpu-threads"' in html

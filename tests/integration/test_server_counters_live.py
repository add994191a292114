"""The server-counters source on real servers (Debian's 10.11, MariaDB 10.2.11 and 11.4.5) under a known load:
sysbench updates, a transaction holding an old read view, one waiting for a row lock, and exactly TMP_QUERIES
statements that each spill one temporary table to disk, with the processlist poller running beside it. One
collection per server (about five seconds), read by every test here."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pymysql
import pytest

from pmuprof.capture.lifecycle import Context
from pmuprof.capture.mysql.connect import MysqlOptions
from pmuprof.capture.mysql import facts as facts_module
from pmuprof.capture.mysql.poll import Processlist
from pmuprof.capture.mysql.serverfacts import ServerFacts
from pmuprof.capture.mysql.status import ServerCounters
from pmuprof.capture.options import RecordOptions
from pmuprof.capture.runner import Outcome
from pmuprof.model import rundir
from pmuprof.model.run import Run
from pmuprof.model.wincounters import WindowCounters
from tests import mariadb as mdb

SERVERS = ("mariadb", "mariadb102", "mariadb114")
TMP_QUERIES = 5  # each one on-disk temporary table (a 10,000-group GROUP BY with a 16 KiB heap limit)
SPILL = "SELECT c, COUNT(*) FROM sbtest1 GROUP BY c"


def _conn(server: mdb.MariaDB) -> Any:
    return pymysql.connect(unix_socket=str(server.socket), user="root", password="", autocommit=True, database="sbtest")


def _id(cur: Any) -> int:
    cur.execute("SELECT CONNECTION_ID()")
    return int(cur.fetchone()[0])


@contextlib.contextmanager
def known_load(server: mdb.MariaDB) -> Iterator[dict[str, Any]]:
    """An idle transaction with a read view (holder), one holding a row lock (locker), one waiting for it
    (waiter), sysbench updating sbtest1; the spilling connection is handed to the caller."""
    holder, locker, waiter, spiller = (_conn(server) for _ in range(4))
    hc, lc, wc, sc = holder.cursor(), locker.cursor(), waiter.cursor(), spiller.cursor()
    ids = {"holder": _id(hc), "locker": _id(lc), "waiter": _id(wc), "spill": sc}
    hc.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
    hc.execute("SELECT COUNT(*) FROM sbtest1")
    hc.fetchall()
    lc.execute("BEGIN")
    lc.execute("UPDATE sbtest2 SET k = k + 1 WHERE id = 1")
    wc.execute("SET SESSION innodb_lock_wait_timeout = 60")
    blocked = threading.Thread(target=_quietly, args=(wc, "UPDATE sbtest2 SET k = k + 1 WHERE id = 1"), daemon=True)
    blocked.start()
    sc.execute("SET SESSION tmp_table_size = 1024, max_heap_table_size = 16384")
    # paced: row changes in every second are what it is for, not busy CPUs (a flat-out load would wait for
    # shared.hold_cpus() here, with the waiter's 60 s lock wait already running)
    load = mdb.SysbenchLoad(server, 30, test="oltp_update_non_index", threads=2, tables=1, rate=200)
    try:
        _until(lambda: _waiting(server) >= 1, "the waiter never waited for its row lock")
        yield ids
    finally:
        load.stop()
        lc.execute("ROLLBACK")  # the waiter gets its lock and finishes
        blocked.join(30)
        for conn in (holder, locker, waiter, spiller):
            conn.close()


def _quietly(cur: Any, sql: str) -> None:
    with contextlib.suppress(pymysql.MySQLError):
        cur.execute(sql)


def _waiting(server: mdb.MariaDB) -> int:
    rows = mdb.sql(server, "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'")
    return int(rows[0][0])


def _until(ready, why: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, why
        time.sleep(0.05)


def _context(server: mdb.MariaDB, out: Path, **options: Any) -> Context:
    opts = RecordOptions(
        pids=(server.pid,), out_dir=out, mysql_options=MysqlOptions(defaults_file=str(server.defaults_file)), **options
    )
    return Context(opts, (server.pid,), Run())


def _window(ctx: Context, status: ServerCounters, poller: Processlist, during: Callable[[], None] | None = None) -> Any:
    """perf's window as a capture runs it: opened once both sources poll (a capture starts perf after its
    sources), three status polls long, or three more after ``during`` ran in it; the poller stopped first.
    The status source's part."""
    try:
        _until(lambda: poller.polls >= 1 and status.polls >= 1, f"no polls: {status.error} {poller.error}")
        opened = time.monotonic()
        _until(lambda: status.polls >= 3, f"status polls stopped: {status.error}")
        if during is not None:
            during()
            _until(lambda: status.polls >= 6, f"status polls stopped: {status.error}")
        ctx.window.outcome = Outcome(elapsed_s=time.monotonic() - opened, window_start_s=opened)
    finally:
        poller.stop(ctx)
        part = status.stop(ctx)
    return part


def collect(server: mdb.MariaDB, out: Path, spill: Any) -> tuple[Any, Any]:
    """The status source and the processlist poller as a capture runs them, started in the registry's order;
    the spilling statements run inside the window."""
    ctx = _context(server, out)
    status, poller = ServerCounters.of(ctx), Processlist.of(ctx)
    status.start(ctx)
    poller.start(ctx)

    def spilling() -> None:
        for _ in range(TMP_QUERIES):
            spill.execute(SPILL)
            spill.fetchall()

    part = _window(ctx, status, poller, spilling)
    return rundir.read_status(out, []), part


@pytest.fixture(scope="module", params=SERVERS)
def collected(request, tmp_path_factory):
    server = request.getfixturevalue(request.param)
    out = tmp_path_factory.mktemp(request.param)
    with known_load(server) as ids:
        status, part = collect(server, out, ids["spill"])
    assert server.password not in (out / rundir.STATUS).read_text()
    return request.param, server, ids, status, part


def test_the_status_is_kept_once_a_second_on_the_proven_connection(collected):
    name, server, _ids, status, part = collected
    assert part.warnings == () and part.why_not == "", part
    assert status is not None and len(status.polls) >= 5 and status.pid == server.pid
    assert status.proof and status.server.family == "mariadb"
    seconds = [p.second for p in status.polls]
    assert seconds == sorted(seconds) and seconds[-1] - seconds[0] <= len(seconds) + 2
    window = WindowCounters.of(status)
    updating = [v for _s, v in window.per_second_values("Com_update")]
    assert window.rate("Com_update") > 10 and sum(v > 0 for v in updating) >= len(updating) - 1, updating
    assert "status.Questions" in {s.name for s in part.series}


def test_pmuprofs_own_statements_are_taken_out_exactly(collected):
    _name, _server, _ids, status, _part = collected
    window = WindowCounters.of(status)
    own = {o.source: o for o in status.own}
    assert set(own) == {"status", "processlist"}
    assert own["processlist"].counters.get("Created_tmp_disk_tables", 0) >= len(own["processlist"].polls) - 1
    spilled = window.delta("Created_tmp_disk_tables")
    # exactly the known statements: the poller's own (one a poll on MariaDB) are out
    assert spilled == TMP_QUERIES, (spilled, window.growth("Created_tmp_disk_tables"), status.own)
    # Nothing else selects and pmuprof's reads are out, but for the statements of the poller's setup that the
    # source's first read may see begin after it (they run at once, as a capture starts them): its proof's
    # one SELECT and the head of its first session read (a read counts itself before it reads), up to 2 of
    # Com_select, plus at most a third of a poll's share from the equal shares.
    assert abs(window.delta("Com_select") - TMP_QUERIES) <= 3, _selects(window)


def _selects(window: WindowCounters) -> str:
    """Com_select over the window, interval by interval, and each own source's polls and share (all of it: a
    failure must say which statements were not taken out)."""
    values, times = window.values("Com_select"), window.times
    steps = [
        f"{t1 - t0:.2f} s " + (f"+{b - a:g}" if a is not None and b is not None else "not read")
        for t0, t1, a, b in zip(times, times[1:], values, values[1:])
    ]
    own = [
        f"{o.source}: {len(o.polls)} polls {[round(t - times[0], 2) for t in o.polls]} "
        f"Com_select {o.counters.get('Com_select')} within {o.within('Com_select', times[0], times[-1]):.2f}"
        for o in window.own_traffic
    ]
    return f"Com_select {window.delta('Com_select')} after own {window.own('Com_select'):.2f}; {steps}; {own}"


def test_the_innodb_state_names_the_old_view_and_the_lock_waiter(collected):
    name, _server, ids, status, _part = collected
    start, end = status.state("start"), status.state("end")
    assert start is not None and end is not None, status.notes
    oldest = end.oldest_view()
    assert oldest is not None and oldest.thread_id == ids["holder"], end
    assert oldest.command == "Sleep" and oldest.statement == "" and oldest.age_s >= 1
    assert oldest.isolation == "REPEATABLE READ"
    if name != "mariadb102":  # 10.2 lists a read-only transaction as "not started", without its view
        assert oldest.read_view and oldest.view_sees_below is not None
    (waiter,) = [t for t in end.waiting if t.thread_id == ids["waiter"]]
    assert waiter.state == "LOCK WAIT" and waiter.statement == "UPDATE sbtest2 SET k = k + ? WHERE id = ?"
    assert end.lock_waits >= 1 and any(t.thread_id == ids["locker"] for t in end.oldest)
    assert end.history_length > start.history_length  # purge is held back by the holder's view
    assert end.trx_id_counter and end.purge_trx_no is not None
    window = WindowCounters.of(status)
    assert window.history_name() == ("trx_rseg_history_len" if name == "mariadb102" else "Innodb_history_list_length")
    assert window.growth(window.history_name()) > 0 and window.rising(window.history_name()) >= 0.5


def test_the_server_facts_reads_come_before_the_window(mariadb, tmp_path, monkeypatch):
    """The server facts read the processlist and the tablespaces through information_schema, an on-disk
    temporary table each that no session status measures. On a saturated server they can run seconds after the
    status source's first poll (a capture's sources start together): the status window opens after them, so an
    idle server has no on-disk temporary table in it. Here the facts are held 1.5 s before those reads."""
    semaphores = facts_module._semaphores

    def late(conn, missing):
        time.sleep(1.5)
        return semaphores(conn, missing)

    monkeypatch.setattr(facts_module, "_semaphores", late)
    ctx = _context(mariadb, tmp_path, duration=2)
    facts, status, poller = ServerFacts.of(ctx), ServerCounters.of(ctx), Processlist.of(ctx)
    for source in (facts, status, poller):  # the registry's order
        source.start(ctx)
    try:
        _window(ctx, status, poller)
    finally:
        facts.stop(ctx)
    kept = rundir.read_status(tmp_path, [])
    window = WindowCounters.of(kept)
    assert window.delta("Created_tmp_disk_tables") == 0, (window.growth("Created_tmp_disk_tables"), kept.own)
    assert (tmp_path / rundir.MYSQL).is_file() and not kept.notes, kept.notes

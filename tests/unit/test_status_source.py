"""The server-counters source (capture/mysql/status.py) against a fake server on a fake clock: what it keeps,
what it takes out as its own and the poller's, how it cuts to perf's window, and that a slow or hung server
ends collection with a warning instead of stalling the capture; the InnoDB status parser on the texts of
MariaDB 10.2.11, 10.11 and MySQL 5.7."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pymysql
import pytest

from pmuprof.capture.lifecycle import Context
from pmuprof.capture.mysql import innodbstate, status as status_mod
from pmuprof.capture.mysql.connect import Endpoint, MysqlOptions
from pmuprof.capture.mysql.status import ServerCounters
from pmuprof.capture.options import RecordOptions
from pmuprof.capture.runner import Outcome
from pmuprof.model import rundir
from pmuprof.model.run import Run
from pmuprof.model.status import OwnTraffic
from pmuprof.model.wincounters import WindowCounters

STATUS_1011 = """
=====================================
2026-12-01 10:00:00 0x7f INNODB MONITOR OUTPUT
=====================================
------------
TRANSACTIONS
------------
Trx id counter 125
Purge done for trx's n:o < 26 undo n:o < 0 state: running
History list length 50
LIST OF TRANSACTIONS FOR EACH SESSION:
---TRANSACTION 24, ACTIVE 5 sec starting index read
mysql tables in use 1, locked 1
LOCK WAIT 2 lock struct(s), heap size 1128, 1 row lock(s)
MariaDB thread id 8, OS thread handle 140633877903040, query id 28 localhost root Updating
UPDATE t.a SET v=v+10 WHERE id=1 /* secret 'x' */
------- TRX HAS BEEN WAITING 4191511 us FOR THIS LOCK TO BE GRANTED:
------------------
---TRANSACTION 23, ACTIVE 5 sec
2 lock struct(s), heap size 1128, 1 row lock(s), undo log entries 1
MariaDB thread id 7, OS thread handle 140633878210240, query id 24 localhost root
---TRANSACTION (0x7fe7e2b61b80), ACTIVE 5 sec
0 lock struct(s), heap size 1128, 0 row lock(s)
MariaDB thread id 6, OS thread handle 140633878517440, query id 20 localhost root
Trx read view will not see trx with id >= 23, sees < 23
--------
FILE I/O
--------
--------------
ROW OPERATIONS
--------------
1 read views open inside InnoDB
state: sleeping
----------------------------
END OF INNODB MONITOR OUTPUT
============================
"""
STATUS_102 = """------------
TRANSACTIONS
------------
Trx id counter 1306
Purge done for trx's n:o < 1297 undo n:o < 0 state: running but idle
History list length 7
LIST OF TRANSACTIONS FOR EACH SESSION:
---TRANSACTION 421951136113048, not started
0 lock struct(s), heap size 1136, 0 row lock(s)
---TRANSACTION 1296, ACTIVE 1 sec
2 lock struct(s), heap size 1136, 1 row lock(s), undo log entries 1
MySQL thread id 12, OS thread handle 140680857413312, query id 22 localhost root cleaning up
--------
FILE I/O
--------
--------------
ROW OPERATIONS
--------------
0 queries inside InnoDB, 0 queries in queue
2 read views open inside InnoDB
"""
STATUS_57 = """------------
TRANSACTIONS
------------
Trx id counter 4401
Purge done for trx's n:o < 4390 undo n:o < 0 state: running but idle
History list length 12
LIST OF TRANSACTIONS FOR EACH SESSION:
---TRANSACTION 4399, ACTIVE 30 sec
MySQL thread id 11, OS thread handle 140, query id 90 localhost root
Trx read view will not see trx with id >= 4400, sees < 4390
--------
FILE I/O
--------
"""


def test_the_innodb_status_parser_reads_purge_history_and_each_sessions_view():
    got = innodbstate.parse_status(STATUS_1011)
    assert (got["trx_id_counter"], got["purge_trx_no"], got["purge_undo_no"]) == (125, 26, 0)
    assert (got["purge_state"], got["history_length"], got["read_views"]) == ("running", 50, 1)
    assert got["views"] == {6: 23} and got["listed"] == {6, 7, 8}  # the session that holds a view, all listed
    old = innodbstate.parse_status(STATUS_102)
    assert old["views"] == {} and old["listed"] == {12} and old["read_views"] == 2
    assert old["purge_state"] == "running but idle"
    assert innodbstate.parse_status(STATUS_57)["views"] == {11: 4390}
    assert innodbstate.parse_status("") == {
        "trx_id_counter": None,
        "history_length": None,
        "read_views": None,
        "purge_trx_no": None,
        "purge_undo_no": None,
        "purge_state": "",
        "views": {},
        "listed": set(),
    }
    huge = STATUS_1011.replace("LIST OF", "x" * (innodbstate.MAX_STATUS_CHARS + 10) + "\nLIST OF")
    assert innodbstate.parse_status(huge)["views"] == {}  # cut, not read past its bound


class FakeServer:
    """Answers the statements the source sends; counts what each connection sent in its session status;
    ``delay`` makes every answer take that long (on the fake clock), ``hang`` raises as PyMySQL does when
    its read timeout expires."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.global_status = {
            "Questions": 1000,
            "Com_select": 500,
            "Threads_running": 2,
            "Innodb_history_list_length": 10,
        }
        self.global_status |= {"Uptime": 100, "Created_tmp_disk_tables": 0, "Created_tmp_tables": 0}
        self.sent: list[str] = []
        self.delay = 0.001
        self.hang_after: int | None = None
        self.session = {"COM_SELECT": 0, "CREATED_TMP_TABLES": 0, "QUESTIONS": 0}
        self.version = ("10.11.6-MariaDB-0+deb12u1", "Debian 12")

    def answer(self, sql: str, as_dicts: bool) -> tuple[list[Any], list[str]]:
        self.sent.append(sql)
        self.clock.now += self.delay
        if self.hang_after is not None and len(self.sent) > self.hang_after:
            self.clock.now += status_mod.QUERY_TIMEOUT_S
            raise pymysql.err.OperationalError(2013, "Lost connection to server during query (timed out)")
        if sql.startswith("SELECT") and "SESSION_STATUS" not in sql:  # a session read shows itself unchanged
            self.session["COM_SELECT"] += 1
            self.session["CREATED_TMP_TABLES"] += 1
            self.session["QUESTIONS"] += 1
            self.global_status["Com_select"] += 1
            self.global_status["Created_tmp_tables"] += 1
        if sql.startswith("SELECT @@version"):
            return [self.version], ["@@version", "@@version_comment"]
        if sql == "SHOW GLOBAL STATUS":
            if "MariaDB" not in self.version[0]:
                self.global_status["Questions"] += 100
            return [(k, str(v)) for k, v in self.global_status.items()], ["Variable_name", "Value"]
        if sql == "SHOW SESSION STATUS":
            return [(k.title(), str(v)) for k, v in self.session.items()], ["Variable_name", "Value"]
        if "GLOBAL_STATUS" in sql:
            self.global_status["Questions"] += 100
            self.global_status["Innodb_history_list_length"] += 5
            return [(k.upper(), str(v)) for k, v in self.global_status.items()], ["VARIABLE_NAME", "VARIABLE_VALUE"]
        if "SESSION_STATUS" in sql:
            return [(k, str(v)) for k, v in self.session.items()], ["VARIABLE_NAME", "VARIABLE_VALUE"]
        if "INNODB_METRICS" in sql and "MariaDB" not in self.version[0]:  # MySQL: STATUS says 'enabled'
            rows = [{"NAME": "trx_rseg_history_len", "COUNT": 77, "STATUS": "enabled"}]
            rows += [{"NAME": "lock_timeouts", "COUNT": 0, "STATUS": "disabled"}]
            return [r for r in rows if f"'{r['NAME']}'" in sql], ["NAME", "COUNT", "STATUS"]
        if "INNODB_METRICS" in sql:
            return [{"NAME": "lock_timeouts", "COUNT": 3, "ENABLED": 1}], ["NAME", "COUNT", "ENABLED"]
        if "INNODB_TRX" in sql:
            row = {"trx_id": "0", "trx_state": "RUNNING", "age_s": 40, "trx_mysql_thread_id": 6, "trx_query": None}
            return [row | {"trx_isolation_level": "REPEATABLE READ"}], list(row)
        if "CONNECTION_ID()" in sql:  # the server thread serving the source's connection
            return ([(4321,)], ["TID"]) if "PROCESSLIST" in sql else ([(4322,)], ["THREAD_OS_ID"])
        if sql == "SHOW FULL PROCESSLIST":
            return [{"Id": 6, "User": "app", "Command": "Sleep", "Time": 39, "Info": None}], ["Id"]
        if sql == "SHOW ENGINE INNODB STATUS":
            return [{"Type": "InnoDB", "Name": "", "Status": STATUS_1011}], ["Type", "Name", "Status"]
        raise AssertionError(f"unexpected statement {sql}")


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.1

    def __call__(self) -> float:
        return self.now


class FakeCursor:
    def __init__(self, server: FakeServer, as_dicts: bool) -> None:
        self.server, self.as_dicts, self.rows, self.description = server, as_dicts, [], ()

    def __enter__(self) -> FakeCursor:
        return self

    def __exit__(self, *exc: Any) -> None:
        pass

    def execute(self, sql: str) -> None:
        rows, names = self.server.answer(sql, self.as_dicts)
        self.description = tuple((n,) for n in names)
        if not self.as_dicts and rows and isinstance(rows[0], dict):
            rows = [tuple(r.values()) for r in rows]
        self.rows = rows

    def fetchall(self) -> list[Any]:
        return list(self.rows)

    def fetchone(self) -> Any:
        return self.rows[0] if self.rows else None

    def fetchmany(self, n: int) -> list[Any]:
        return list(self.rows[:n])


class FakeConn:
    def __init__(self, server: FakeServer) -> None:
        self.server, self.closed = server, False

    def cursor(self, cls: Any = None) -> FakeCursor:
        return FakeCursor(self.server, cls is pymysql.cursors.DictCursor)

    def close(self) -> None:
        self.closed = True


def _source(tmp_path: Path, monkeypatch, polls: int, server: FakeServer | None = None):
    clock = FakeClock()
    server = server or FakeServer(clock)
    server.clock = clock
    conn = FakeConn(server)
    proof = Endpoint(socket="/run/mysqld/mysqld.sock", proof="the socket's listener is pid 123 (SO_PEERCRED)")
    monkeypatch.setattr(status_mod, "connect", lambda opts, pid, read_timeout: (conn, proof, ["s3cret"]))
    holder: dict[str, ServerCounters] = {}

    def wait(seconds: float) -> bool:  # the fake clock moves on; the source is stopped after ``polls`` polls
        clock.now += seconds
        return holder["src"].polls >= polls

    src = ServerCounters(MysqlOptions(), 123, tmp_path / rundir.STATUS, clock=clock, wait=wait)
    holder["src"] = src
    ctx = Context(RecordOptions(pids=(123,), out_dir=tmp_path), (123,), Run())
    return src, ctx, server, conn


def _run(src: ServerCounters, ctx: Context):
    src.start(ctx)
    src._thread.join(5)
    return src.stop(ctx)


def test_it_keeps_the_status_once_a_second_and_both_innodb_states(tmp_path, monkeypatch):
    src, ctx, server, conn = _source(tmp_path, monkeypatch, polls=4)
    part = _run(src, ctx)
    assert part.files == (rundir.STATUS,) and part.warnings == () and part.why_not == "" and conn.closed
    status = rundir.read_status(tmp_path, [])
    assert len(status.polls) == 5 and status.read_with.endswith("information_schema.GLOBAL_STATUS")
    # the first poll at once, then a quarter into each second; the last when told to stop
    assert [round(p.t % 1, 2) for p in status.polls[1:-1]] == [0.25] * 3
    assert [p.second for p in status.polls] == [1000, 1000, 1001, 1002, 1003]
    assert status.proof.endswith("(SO_PEERCRED)") and status.pid == 123 and status.server.family == "mariadb"
    assert "Questions" in status.values and "QUESTIONS" not in status.values  # spelled as SHOW STATUS does
    assert status.first["Uptime"] == "100" and status.last["Questions"] == str(server.global_status["Questions"])
    start, end = status.state("start"), status.state("end")
    assert start.history_length == 10 and start.history_source == "Innodb_history_list_length"
    assert end.history_length == server.global_status["Innodb_history_list_length"]
    (oldest,) = end.oldest
    assert (oldest.thread_id, oldest.age_s, oldest.command, oldest.user) == (6, 40, "Sleep", "app")
    assert oldest.read_view and oldest.view_sees_below == 23 and end.oldest_view() == oldest
    assert end.purge_trx_no == 26 and end.trx_id_counter == 125
    series = {s.name: s for s in part.series}
    assert series["status.Questions"].show and series["status.Questions"].unit == "/s"
    window = WindowCounters.of(status)
    assert tuple(series["status.Questions"].points()) == window.per_second_values("Questions")
    assert "status.Com_insert" not in series  # the server has no such counter: no series


def test_its_own_reads_and_the_pollers_are_taken_out(tmp_path, monkeypatch):
    src, ctx, server, _conn = _source(tmp_path, monkeypatch, polls=4)
    poller = OwnTraffic("processlist", (1000.8, 1001.8, 1002.8), 3, {"CREATED_TMP_DISK_TABLES": 3.0})
    ctx.window.own_sql.append(poller)
    server.global_status["Created_tmp_disk_tables"] = 0
    part = _run(src, ctx)
    status = rundir.read_status(tmp_path, [])
    assert {o.source for o in status.own} == {"processlist", "status"}
    mine = next(o for o in status.own if o.source == "status")
    assert mine.counters["Com_select"] > 0 and len(mine.polls) == 4  # every poll but the first (the baseline)
    assert mine.thread == 4321  # the server thread that ran them, asked before its traffic was measured
    window = WindowCounters.of(status)
    assert window.growth("Com_select") > 0 and window.delta("Com_select") == pytest.approx(0, abs=1)
    assert window.own("Created_tmp_disk_tables") == 3.0  # the poller's, in the names SHOW STATUS uses
    assert all(v == 0 for _s, v in window.per_second_values("Com_select")[1:-1])
    assert part.warnings == ()


def test_polls_are_cut_to_perfs_window(tmp_path, monkeypatch):
    src, ctx, _server, _conn = _source(tmp_path, monkeypatch, polls=6)
    ctx.window.outcome = Outcome(elapsed_s=2.0, window_start_s=1001.6)  # seconds 1001 .. 1003
    _run(src, ctx)
    status = rundir.read_status(tmp_path, [])
    assert [p.second for p in status.polls] == [1000, 1001, 1002, 1003, 1004]  # baseline before, closing after
    assert status.first["Questions"] == str(1000 + 100 * 2)  # rebuilt as the second read (the baseline) had it


def test_a_hung_server_ends_collection_with_a_warning_not_a_stall(tmp_path, monkeypatch):
    clock = FakeClock()
    server = FakeServer(clock)
    src, ctx, server, conn = _source(tmp_path, monkeypatch, polls=50, server=server)
    server.hang_after = 14  # a few polls, then every answer times out
    part = _run(src, ctx)
    assert conn.closed and not src._thread.is_alive()
    (warning,) = part.warnings
    assert "server counters: collection stopped after" in warning and "timed out" in warning
    assert "s3cret" not in warning
    status = rundir.read_status(tmp_path, [])
    assert len(status.polls) == src.polls and status.state("end") is None  # no end state: it gave up


def test_a_slow_server_makes_it_stop_to_spare_the_server(tmp_path, monkeypatch):
    src, ctx, server, _conn = _source(tmp_path, monkeypatch, polls=50)
    server.delay = status_mod.SLOW_S  # every statement this slow: each poll (two reads) twice over SLOW_S
    part = _run(src, ctx)
    assert src.polls == status_mod.SLOW_POLLS
    assert f"took over {status_mod.SLOW_S:g} s" in part.warnings[0]


def test_an_unreachable_server_is_one_warning_and_no_file(tmp_path, monkeypatch):
    def refuse(opts, pid, read_timeout):
        raise ConnectionError("socket /run/mysqld/mysqld.sock: (2002, 'no such file')")

    monkeypatch.setattr(status_mod, "connect", refuse)
    src = ServerCounters(MysqlOptions(), 123, tmp_path / rundir.STATUS)
    ctx = Context(RecordOptions(pids=(123,), out_dir=tmp_path), (123,), Run())
    src.start(ctx)
    part = src.stop(ctx)
    assert part.files == () and not (tmp_path / rundir.STATUS).exists()
    assert part.why_not.startswith("socket /run/mysqld") and part.warnings[0].startswith(
        "server counters not collected"
    )


def test_a_stuck_poll_is_waited_for_at_most_join_s(tmp_path, monkeypatch):
    """A driver that never returns (no timeout at all): stop gives up on the thread after join_s."""
    src, ctx, server, _conn = _source(tmp_path, monkeypatch, polls=50)
    release = threading.Event()
    original = server.answer

    def stuck(sql: str, as_dicts: bool):
        if "GLOBAL_STATUS" in sql and src.polls >= 2:
            release.wait(30)
        return original(sql, as_dicts)

    server.answer = stuck
    src.join_s = 0.2
    src.start(ctx)
    while src.polls < 2:
        threading.Event().wait(0.01)
    part = src.stop(ctx)
    release.set()
    assert part.files == (rundir.STATUS,) and len(rundir.read_status(tmp_path, []).polls) == 2


def test_on_mysql_it_reads_show_status_and_the_metric_for_the_history_length(tmp_path, monkeypatch):
    """MySQL (no information_schema status tables since 8.0, no Innodb_history_list_length): SHOW STATUS, and
    INNODB_METRICS' trx_rseg_history_len where its STATUS column says enabled. Canned answers: no MySQL here."""
    clock = FakeClock()
    server = FakeServer(clock)
    server.version = ("8.0.36", "MySQL Community Server - GPL")
    del server.global_status["Innodb_history_list_length"]
    src, ctx, server, _conn = _source(tmp_path, monkeypatch, polls=3, server=server)
    part = _run(src, ctx)
    status = rundir.read_status(tmp_path, [])
    assert part.warnings == () and status.read_with == "SHOW GLOBAL STATUS" and status.server.family == "mysql"
    assert "SHOW SESSION STATUS" in server.sent and not any("information_schema.GLOBAL" in q for q in server.sent)
    assert status.last["trx_rseg_history_len"] == "77" and "lock_timeouts" not in status.last  # disabled: not read
    assert status.state("start").history_source == "trx_rseg_history_len"
    assert WindowCounters.of(status).history_name() == "trx_rseg_history_len"
    assert {s.name for s in part.series} >= {"status.history_length", "status.Questions"}


def test_a_first_read_that_another_pmuprof_statement_ran_across_does_not_open_the_window(tmp_path, monkeypatch):
    """The poller's first statement ran while the source's first read did (they start together): it cannot be
    placed before or after that read, so the next read opens the window and the statement is left out."""
    src, ctx, _server, _conn = _source(tmp_path, monkeypatch, polls=4)
    poller = OwnTraffic("processlist", (1000.1065, 1000.5), 2, {"Created_tmp_disk_tables": 2.0}, (1000.1075, 1000.51))
    ctx.window.own_sql.append(poller)
    ctx.window.outcome = Outcome(elapsed_s=3.0, window_start_s=1000.9)
    _run(src, ctx)
    status = rundir.read_status(tmp_path, [])
    assert status.polls[0].t == pytest.approx(1000.25)  # the second read: the first (at 1000.106) was crossed
    window = WindowCounters.of(status)
    assert window.own("Created_tmp_disk_tables") == 1.0  # the poll at 1000.5 only

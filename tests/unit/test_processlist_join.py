"""The processlist polled during a capture: digests without literals, the (tid, second) join, CPU by state."""

from __future__ import annotations

import numpy as np

from pmuprof.analysis import threads
from pmuprof.capture.mysql.poll import digest, row_line
from pmuprof.model import processlist, rundir
from pmuprof.model.profile import Profile
from pmuprof.model.samples import from_keyed
from pmuprof.model.stacks import Stacks


def test_digest_drops_every_literal_and_comment():
    sql = (
        "SELECT /* app=shop */ c FROM sbtest1 WHERE id = 42 AND name = 'O''Brien' AND k IN (1, 2, 3) "
        'AND pwd = "s3cret" -- trailing\n AND x > -1.5e3'
    )
    text = digest(sql)
    assert text == "SELECT c FROM sbtest1 WHERE id = ? AND name = ? AND k IN (...) AND pwd = ? AND x > ?"
    assert "s3cret" not in text and "Brien" not in text and "42" not in text
    assert digest(None) == "" and digest(b"SELECT 1") == "SELECT ?"
    assert len(digest("SELECT " + "a, " * 500 + "b")) <= 241


def test_row_line_needs_a_thread_id_and_keeps_cells_on_one_line():
    assert row_line(7, (1, None, "u", "d", "Query", "x", 0, "SELECT 1")) is None
    line = row_line(7, (1, 55, "u\tx", None, "Query", "Sending\ndata", 3, "SELECT 'a'"))
    assert line == "7\t55\t1\tu x\t\tQuery\tSending data\t3\tSELECT ?\n"


TEXT = """# pmuprof processlist: second\ttid\tid\tuser\tdb\tcommand\tstate\ttime\tdigest
100\t11\t1\tapp\tshop\tQuery\tstatistics\t0\tSELECT ?
100\t12\t2\tapp\tshop\tQuery\tSending data\t0\tSELECT c FROM t
102\t11\t1\tapp\tshop\tQuery\tSending data\t0\tSELECT c FROM t
bad line
"""


def test_lookup_takes_the_same_second_else_a_neighbour():
    polled = processlist.parse(TEXT)
    assert len(polled) == 3
    at = polled.lookup(np.array([11, 12, 11, 11, 13, -1]), np.array([100, 101, 101, 104, 100, 100]))
    assert [polled.value("state", a) if a >= 0 else None for a in at.tolist()] == [
        "statistics",
        "Sending data",
        "statistics",
        None,
        None,
        None,
    ]


def test_cpu_by_state_statement_and_thread(tmp_path):
    dive = ("mysqld", "do_command", "btr_estimate_n_rows_in_range", "ut_delay")
    scan = ("mysqld", "do_command", "row_search_mvcc")
    keyed = {(dive, 11, 100): 72, (scan, 11, 100): 28, (scan, 12, 100): 50, (scan, 40, 100): 10}
    stacks = Stacks.of({dive: 72, scan: 88})
    (tmp_path / rundir.PROCESSLIST).write_text(TEXT)
    profile = Profile(stacks, source=str(tmp_path), samples=from_keyed(stacks, keyed))
    out = threads.tables(profile)
    assert out["polled"] and out["joined"] == 150 and out["samples"] == 160
    state = {t["name"]: t for t in out["tables"]}["state"]["rows"]
    stats = next(r for r in state if r["key"] == "statistics")
    assert stats["samples"] == 100 and stats["function"] == "btr_estimate_n_rows_in_range"
    assert stats["sentence"] == (
        "72 % of the samples of threads in `statistics` were in btr_estimate_n_rows_in_range (45 % overall)"
    )
    assert {r["key"]: r["samples"] for r in state} == {"statistics": 100, "Sending data": 50, threads.NOT_POLLED: 10}
    by_thread = {t["name"]: t for t in out["tables"]}["thread"]["rows"]
    assert [(r["key"], r["samples"]) for r in by_thread] == [
        ("11 (connection 1, app)", 100),
        ("12 (connection 2, app)", 50),
        ("40", 10),
    ]
    cells = {t["name"]: t for t in out["tables"]}["state"]["cells"]
    assert sorted(cells) == [[0, 100, 100], [1, 100, 50], [2, 100, 10]]


def test_no_thread_ids_no_tables():
    stacks = Stacks.of({("mysqld", "f"): 3})
    assert threads.tables(Profile(stacks)) is None
    assert threads.tables(Profile(stacks, samples=from_keyed(stacks, {(("mysqld", "f"), -1, 5): 3}))) is None


def _two_sides(tmp_path):
    tmp_path.mkdir(exist_ok=True)
    dive = ("mysqld", "do_command", "btr_estimate_n_rows_in_range", "ut_delay")
    scan = ("mysqld", "do_command", "row_search_mvcc")
    before_keyed = {(dive, 11, 100): 720, (scan, 11, 100): 280, (scan, 12, 100): 500, (scan, 40, 100): 100}
    after_keyed = {(dive, 11, 100): 50, (scan, 11, 100): 950, (scan, 12, 100): 500, (scan, 40, 100): 100}
    sides = []
    for name, keyed in (("b", before_keyed), ("a", after_keyed)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / rundir.PROCESSLIST).write_text(TEXT)
        totals: dict = {}
        for (stack, _, _), n in keyed.items():
            totals[stack] = totals.get(stack, 0) + n
        stacks = Stacks.of(totals)
        sides.append(threads.attach(Profile(stacks, source=str(folder), samples=from_keyed(stacks, keyed))))
    return sides


def test_split_by_thread_puts_a_thread_frame_under_the_root(tmp_path):
    before, _ = _two_sides(tmp_path)
    split = threads.split_by_thread(before)
    assert split.total == before.total
    assert split[("mysqld", "thread-11", "do_command", "btr_estimate_n_rows_in_range", "ut_delay")] == 720
    assert split[("mysqld", "thread-40", "do_command", "row_search_mvcc")] == 100


def test_diff_split_by_state_statement_and_thread(tmp_path):
    from pmuprof.report.diff import diff_document, diff_profiles
    from pmuprof.report.diffmd import render_diff_markdown

    doc = diff_document(diff_profiles(*_two_sides(tmp_path)))
    split = {t["name"]: t for t in doc["split"]}
    assert set(split) == {"state", "statement", "user", "command", "thread"}
    thread = {r["key"]: r for r in split["thread"]["rows"]}
    t11 = thread["11 (connection 1, app)"]
    assert t11["before"] == t11["after"] == 1000 / 1600 and not t11["outside_noise"]
    # the CPU of thread 11 did not move, but what it ran did: the function table shows the dive's fall
    assert next(r for r in doc["self"] if r["name"] == "ut_delay")["self_outside_noise"]
    assert "### CPU by processlist state" in render_diff_markdown(doc)
    from pmuprof.report.diff import write_diff

    html = write_diff(diff_profiles(*_two_sides(tmp_path / "again")), tmp_path / "out")["diff.html"].read_text()
    assert 'table class="sort split" data-table="state"' in html and "<code>statistics</code>" in html


class _Cursor:
    def __init__(self, conn):
        self.conn, self.description, self.rows = conn, None, []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def execute(self, sql):
        self.conn.sql.append(sql)
        if "LIMIT 0" in sql:
            self.description = [(c,) for c in self.conn.columns]
        elif "@@performance_schema" in sql:
            self.rows = [(self.conn.pfs,)]
        else:
            self.rows = [
                (5, 77, "app", "shop", "Query", "statistics", 0, "SELECT * FROM t WHERE a = 'x1'"),
                (6, None, "app", "shop", "Query", "init", 0, None),
            ]

    def fetchone(self):
        return self.rows[0]

    def fetchmany(self, n):
        return self.rows[:n]

    def fetchall(self):
        return self.rows


class _Conn:
    def __init__(self, columns, pfs=1):
        self.columns, self.pfs, self.sql = columns, pfs, []

    def cursor(self, *_a):
        return _Cursor(self)


def test_choose_sql_prefers_processlist_tid_then_performance_schema():
    import pytest as _pytest
    from pmuprof.capture.mysql import poll

    assert poll.choose_sql(_Conn(["ID", "USER", "TID"])) == poll.MARIADB_SQL
    assert poll.choose_sql(_Conn(["ID", "USER"], pfs=1)) == poll.MYSQL_SQL
    with _pytest.raises(LookupError):
        poll.choose_sql(_Conn(["ID", "USER"], pfs=0))


class _Clock:
    """A monotonic clock that moves only when the poller reads (each query takes ``query_s``) or waits."""

    def __init__(self, now: float, query_s: float) -> None:
        self.now, self.query_s, self.waits = now, query_s, []

    def __call__(self) -> float:
        return self.now

    def wait(self, seconds: float) -> bool:
        self.waits.append(round(seconds, 3))
        self.now += seconds
        return False


def test_poller_writes_one_line_per_connection_per_poll(tmp_path, monkeypatch):
    """Polls start half a second into each second of the clock, so each lands in its own second (a slow
    query too), and each row is stamped with it; the per-second series counts the rows."""
    import io
    from pmuprof.capture import persecond
    from pmuprof.capture.mysql import poll

    clock = _Clock(10.3, 0.2)
    p = poll.Processlist(None, None, tmp_path / "p.tsv", clock=clock, wait=clock.wait)
    conn, out = _Conn(["TID"]), type("Out", (io.StringIO,), {"close": lambda self: None})()
    read = p.read

    def timed_read():
        clock.now += clock.query_s
        clock.query_s = 0.7 if clock.query_s == 0.2 else 0.2  # every other query is slow
        return read()

    p.open = lambda ctx: None
    p.read = timed_read
    p._conn, p._sql, p._out = conn, poll.MARIADB_SQL, out
    monkeypatch.setattr(persecond, "MAX_POLLS", 4)
    p._run(None)
    assert p.polls == 4 and p.rows == 4 and p.error == "stopped after 4 polls"
    seconds = [int(ln.split("\t")[0]) for ln in out.getvalue().splitlines()]
    assert seconds == [10, 11, 12, 13]  # the midpoint of each query, on the capture's clock
    assert clock.waits == [1.0, 0.3, 0.8, 0.3]  # from each query's end to the middle of the next second
    assert out.getvalue().splitlines()[0].endswith("statistics\t0\tSELECT * FROM t WHERE a = ?")
    (active,) = p.series()
    assert active.name == "processlist.active" and active.first == 10 and active.values == (1.0,) * 4


TWO_STATES = """# pmuprof processlist: second\ttid\tid\tuser\tdb\tcommand\tstate\ttime\tdigest
100\t11\t1\tapp\tshop\tQuery\tstatistics\t0\tSELECT ?
100\t12\t2\tapp\tshop\tQuery\tSending data\t0\tSELECT c FROM t
"""


def _state_rows(tmp_path, keyed: dict) -> dict:
    totals: dict = {}
    for (stack, _, _), n in keyed.items():
        totals[stack] = totals.get(stack, 0) + n
    stacks = Stacks.of(totals)
    (tmp_path / rundir.PROCESSLIST).write_text(TWO_STATES)
    out = threads.tables(Profile(stacks, source=str(tmp_path), samples=from_keyed(stacks, keyed)))
    return out, {r["key"]: r for r in {t["name"]: t for t in out["tables"]}["state"]["rows"]}


def test_a_groups_function_is_what_sets_it_apart_not_what_every_statement_runs(tmp_path):
    """Every statement runs mysql_execute_command, and no callee below it holds half of `statistics`:
    the hot path ends there. The function that sets `statistics` apart is the one it runs far more
    than the whole does."""
    top = ("mysqld", "do_command", "mysql_execute_command")
    keyed = {
        (top + ("btr_estimate_n_rows_in_range",), 11, 100): 40,
        (top + ("row_search_mvcc",), 11, 100): 30,
        (top + ("ha_commit_trans",), 11, 100): 30,
        (top + ("row_search_mvcc",), 12, 100): 40,
        (top + ("ha_commit_trans",), 12, 100): 60,
    }
    _, state = _state_rows(tmp_path, keyed)
    stats = state["statistics"]
    assert (stats["function"], stats["function_share"], stats["function_overall"]) == (
        "btr_estimate_n_rows_in_range",
        0.4,
        0.2,
    )
    assert state["Sending data"]["function"] == "ha_commit_trans"  # 60 % of the group, 45 % overall


def test_a_group_doing_what_the_whole_does_gets_its_hot_path(tmp_path):
    top = ("mysqld", "do_command", "mysql_execute_command", "row_search_mvcc")
    _, state = _state_rows(
        tmp_path, {(top + ("row_sel_store_mysql_rec",), 11, 100): 90, (top + ("btr_cur_t::search_leaf",), 11, 100): 10}
    )
    assert state["statistics"]["function"] == "row_sel_store_mysql_rec"
    assert state["statistics"]["function_share"] == 0.9


def test_samples_of_a_connection_between_polls_are_idle_at_the_poll_not_a_background_thread(tmp_path):
    """Thread 12 was a connection at second 100; at 104 no poll listed it (it was asleep between
    statements): its samples there are the connection's, idle at the poll. Thread 40 was never listed."""
    scan = ("mysqld", "do_command", "row_search_mvcc")
    out, state = _state_rows(
        tmp_path, {(scan, 11, 100): 50, (scan, 12, 100): 20, (scan, 12, 104): 30, (scan, 40, 104): 5}
    )
    assert {k: r["samples"] for k, r in state.items()} == {
        "statistics": 50,
        threads.IDLE_AT_POLL: 30,
        "Sending data": 20,
        threads.NOT_POLLED: 5,
    }
    assert state[threads.IDLE_AT_POLL]["sentence"] == ""
    users = {r["key"]: r["samples"] for r in {t["name"]: t for t in out["tables"]}["user"]["rows"]}
    assert users == {"app@shop": 70, threads.IDLE_AT_POLL: 30, threads.NOT_POLLED: 5}
    assert (out["polls"], out["seconds"]) == (1, 5)

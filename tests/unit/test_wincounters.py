"""status.json and the window view over it (model/status.py, model/wincounters.py): the arithmetic a rule
reads (deltas, rates, ratios, growth, peaks, pmuprof's own statements taken out), the same questions asked
of mysql.json's before/after status, the file's contract, and runs without it."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from pmuprof.capture.mysql import parse as mp
from pmuprof.model import rundir
from pmuprof.model.jsontypes import from_json, to_json
from pmuprof.model.profile import Profile
from pmuprof.model.run import Run, Target
from pmuprof.model.server import ServerFacts, StatusFacts
from pmuprof.model.status import InnodbState, OwnTraffic, Poll, ServerStatus, Transaction, is_level
from pmuprof.model.wincounters import FACTS_OWN, POLL_OWN, WindowCounters, estimated_own


def _status(**kw) -> ServerStatus:
    """Five polls a second apart: Com_select rises 10, 10, 0, 30 (3 of them pmuprof's, one a poll);
    Threads_running 1, 4, 2, 2, 3; the history length 100, 150, 200, 190, 400; Created_tmp_disk_tables
    one per poll, all the processlist poller's."""
    polls = tuple(Poll(100 + i, 100.5 + i, 2.0) for i in range(5))
    values = {
        "Com_select": (1000.0, 1010.0, 1020.0, 1020.0, 1050.0),
        "Threads_running": (1.0, 4.0, 2.0, 2.0, 3.0),
        "Innodb_history_list_length": (100.0, 150.0, 200.0, 190.0, 400.0),
        "Created_tmp_disk_tables": (7.0, 8.0, 9.0, 10.0, 11.0),
    }
    first = {"Com_select": "1000", "Threads_running": "1", "Innodb_history_list_length": "100", "Opened_tables": "5"}
    first |= {"Created_tmp_disk_tables": "7", "Version_text": "x", "Sort_scan": "10", "Sort_range": "10"}
    last = {**first, "Com_select": "1050", "Threads_running": "3", "Innodb_history_list_length": "400"}
    last |= {"Created_tmp_disk_tables": "11"}
    own = (
        OwnTraffic("status", tuple(100.4 + i for i in range(1, 4)), 3, {"Com_select": 3.0}),
        OwnTraffic("processlist", tuple(100.9 + i for i in range(4)), 4, {"Created_tmp_disk_tables": 4.0}),
    )
    return ServerStatus(pid=123, polls=polls, values=values, first=first, last=last, own=own, **kw)


def test_counters_over_the_window_take_pmuprofs_own_statements_out():
    w = WindowCounters.of(_status())
    assert w.source == "status.json" and w.per_second and w.span == 4.0
    assert w.growth("Com_select") == 50 and w.own("Com_select") == 3.0
    assert w.delta("Com_select") == 47 and w.rate("Com_select") == 47 / 4
    assert w.delta("Created_tmp_disk_tables") == 0 and w.rate("Created_tmp_disk_tables") == 0  # all the poller's
    assert w.delta("Opened_tables") == 0 and w.rate("Opened_tables") == 0  # read, never moved
    assert w.delta("Threads_running") is None and w.rate("Threads_running") is None  # a level has no delta
    assert w.delta("No_such_counter") is None and not w.has("No_such_counter")
    assert w.delta(("Com_select", "Opened_tables")) == 47  # several, summed
    # each poll's share lands in the interval it fell in: the seconds read 10-1, 10-1, 0-1 → 0, 30
    assert w.per_second_values("Com_select") == ((101, 9.0), (102, 9.0), (103, 0.0), (104, 30.0))
    assert w.peak("Com_select") == 30.0


def test_levels_read_as_values_growth_peak_and_rising():
    w = WindowCounters.of(_status())
    assert w.value_at("first", "Threads_running") == 1 and w.value_at("last", "Threads_running") == 3
    assert w.mean("Threads_running") == 12 / 5 and w.peak("Threads_running") == 4
    assert w.growth("Innodb_history_list_length") == 300 and w.rising("Innodb_history_list_length") == 0.75
    assert w.history_length("first") == 100 and w.history_length("last") == 400
    assert w.history_name() == "Innodb_history_list_length"
    assert w.per_second_values("Threads_running")[1] == (101, 4.0)
    with pytest.raises(ValueError, match="edge"):
        w.value_at("middle", "Threads_running")


def test_ratios_and_a_counter_reset_in_the_window():
    reset = _status()
    values = dict(reset.values) | {"Sort_merge_passes": (5.0, 9.0, 1.0, 3.0, 4.0)}  # FLUSH STATUS before poll 2
    w = WindowCounters.of(ServerStatus(polls=reset.polls, values=values, first=reset.first, last=reset.last))
    assert w.delta("Sort_merge_passes") == 4 + 2 + 1  # the interval that fell is left out
    assert w.rate("Sort_merge_passes") == 7 / 3
    assert w.ratio("Com_select", ("Sort_scan", "Sort_range")) is None  # the denominator did not move
    assert w.ratio("Sort_merge_passes", "Com_select") == 7 / 50


def test_a_short_interval_joins_its_neighbour_in_the_per_second_values():
    """0.2 s, 1 s and 0.1 s between four polls: the first joins the second, the last (the poll that closes
    the window right after the one before) joins the one before it; the window's rate is unchanged."""
    polls = (Poll(10, 10.3, 1.0), Poll(10, 10.5, 1.0), Poll(11, 11.5, 1.0), Poll(11, 11.6, 1.0))
    values = {"Questions": (0.0, 100.0, 200.0, 300.0)}
    w = WindowCounters.of(ServerStatus(polls=polls, values=values, first={"Questions": "0"}, last={"Questions": "300"}))
    ((second, rate),) = w.per_second_values("Questions")
    assert second == 11 and rate == pytest.approx(300 / 1.3) and w.rate("Questions") == pytest.approx(300 / 1.3)


def test_mysql_json_status_answers_the_same_questions():
    before = {"Questions": "100", "Com_select": "50", "Threads_running": "3", "Threads_created": "10"}
    after = {"Questions": "300", "Com_select": "90", "Threads_running": "5", "Threads_created": "14"}
    facts = StatusFacts(interval_s=2.0, before=before, after=after, rates=mp.status_rates(before, after, 2.0))
    w = WindowCounters.of(None, facts)
    assert w.source == "mysql.json" and not w.per_second and w.span == 2.0
    for name, rate in facts.rates.items():  # what mysql.json always said, read through the view
        assert w.rate(name) == rate
    assert facts.rates["Threads_created"] == 2.0  # a counter, not a level (Threads_ is not all levels)
    assert w.growth("Threads_running") == 2 and w.peak("Threads_running") == 5 and w.rate("Threads_running") is None
    assert w.per_second_values("Questions") == ((None, 100.0),) and w.own("Questions") == 0
    assert WindowCounters.of(None, StatusFacts()) is None and WindowCounters.of(None, None) is None


def test_status_json_is_preferred_to_mysql_json_once_it_has_two_polls():
    facts = StatusFacts(interval_s=1.0, before={"Questions": "1"}, after={"Questions": "2"})
    assert WindowCounters.of(_status(), facts).source == "status.json"
    one = ServerStatus(polls=(Poll(1, 1.5, 1.0),), first={"Questions": "1"}, last={"Questions": "1"})
    assert WindowCounters.of(one, facts).source == "mysql.json"


def test_the_window_belongs_to_the_target_pid():
    stacks = {("mariadbd", "main"): 10}
    run = Run(targets=(Target(pid=123, label="mariadbd"),))
    assert Profile(stacks, run, status=_status()).window_counters("mariadbd").source == "status.json"
    other = Run(targets=(Target(pid=999, label="mariadbd"),))
    assert Profile(stacks, other, status=_status()).window_counters("mariadbd") is None
    server = ServerFacts(
        reachable=True, pid=999, status=StatusFacts(interval_s=1.0, before={"Questions": "1"}, after={"Questions": "3"})
    )
    assert Profile(stacks, other, server=server, status=_status()).window_counters("mariadbd").source == "mysql.json"
    assert Profile(stacks, run).window_counters("mariadbd") is None  # a folded file: nothing to read


def test_status_json_round_trips_and_a_damaged_one_is_left_out_with_a_note(tmp_path: Path):
    status = _status(innodb=(InnodbState(when="start", history_length=100, oldest=(Transaction(thread_id=7),)),))
    rundir.write_typed(tmp_path / rundir.STATUS, status, compact=True)
    notes: list[str] = []
    assert rundir.read_status(tmp_path, notes) == status and notes == []
    assert rundir.STATUS in rundir.RUN_FILES
    data = json.loads((tmp_path / rundir.STATUS).read_text())
    for broken, why in (
        ({**data, "values": {"Com_select": [1, 2]}}, "2 values for 5 polls"),
        ({**data, "format": 2}, "newer than this pmuprof reads"),
        ({**data, "polls": list(reversed(data["polls"]))}, "not in time order"),
        ({**data, "own": [{"polls": ["x"]}]}, "own[0].polls"),
    ):
        (tmp_path / rundir.STATUS).write_text(json.dumps(broken))
        notes = []
        assert rundir.read_status(tmp_path, notes) is None and why in notes[0], notes
        assert notes[0].endswith("left out of the report")
    (tmp_path / rundir.STATUS).unlink()
    assert rundir.read_status(tmp_path, notes) is None  # an older run: no file, nothing to say


def test_the_oldest_read_view_and_transaction():
    old = Transaction(thread_id=5, age_s=300, isolation="REPEATABLE READ")
    viewer = Transaction(thread_id=6, age_s=100, read_view=True, view_sees_below=40)
    younger_view = Transaction(thread_id=7, age_s=200, read_view=True, view_sees_below=90)
    state = InnodbState(oldest=(old, younger_view, viewer), read_views=2)
    assert state.oldest_transaction() == old and state.oldest_view() == viewer
    assert InnodbState(oldest=(old,), read_views=1).oldest_view() == old  # 10.2: no per-transaction view lines
    writer = replace(old, thread_id=9, age_s=400, listed=True)  # listed without a view: it holds none
    assert InnodbState(oldest=(writer, old), read_views=1).oldest_view() == old
    assert InnodbState(oldest=(old,), read_views=0).oldest_view() is None
    assert InnodbState().oldest_transaction() is None


def test_levels_and_counters_are_told_apart():
    levels = (
        "Threads_running",
        "Threads_connected",
        "Open_tables",
        "Innodb_history_list_length",
        "trx_rseg_history_len",
    )
    counters = ("Threads_created", "Opened_tables", "Innodb_buffer_pool_pages_flushed", "Questions", "lock_deadlocks")
    assert all(is_level(n) for n in levels) and not any(is_level(n) for n in counters)


def test_typed_from_plain_json():
    data = to_json(_status())
    assert from_json(ServerStatus, json.loads(json.dumps(data))) == _status()


INCIDENTS = Path(__file__).resolve().parents[1] / "data" / "incidents" / "mariadb1011"


def test_mysql_json_has_pmuprofs_own_statements_taken_out_as_estimated():
    """A run without status.json measured none of its own statements: what its server facts and, on MariaDB, its
    processlist poller (an on-disk temporary table a poll) add at most is taken out instead."""
    facts = StatusFacts(5.0, {"Created_tmp_disk_tables": "100", "Uptime": "9"}, {"Created_tmp_disk_tables": "107"})
    own = estimated_own("mariadb", 5.0)  # no processlist.tsv: the poller is taken to have run, once more than 5
    w = WindowCounters.of(None, facts, own)
    assert (
        w.own("Created_tmp_disk_tables")
        == FACTS_OWN["Created_tmp_disk_tables"] + 6 * POLL_OWN["Created_tmp_disk_tables"]
    )
    assert w.delta("Created_tmp_disk_tables") == 0 and w.rate("Created_tmp_disk_tables") == 0  # idle: nothing
    assert estimated_own("mariadb", 5.0, polls=3).counters["Created_tmp_disk_tables"] == 2 + 3
    assert estimated_own("mysql", 5.0).counters == FACTS_OWN  # MySQL's poller reads performance_schema
    assert WindowCounters.of(None, facts).delta("Created_tmp_disk_tables") == 7  # without the estimate


def test_a_recorded_run_directory_without_status_json_gives_its_window():
    profile = rundir.load_run_dir(INCIDENTS / "table_cache")
    assert profile.status is None and profile.activity is not None and profile.activity.polls >= 5
    w = profile.window_counters("mariadbd")
    assert w is not None and w.source == "mysql.json" and w.rate("Table_open_cache_misses") > 1000
    assert w.own("Created_tmp_disk_tables") > 0

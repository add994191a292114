"""model/window.py: the server's counters over the window (delta, rate, ratio, growth), pmuprof's own statements
subtracted, and the processlist polls."""

from __future__ import annotations

from pathlib import Path

import pytest

from pmuprof.model import rundir
from pmuprof.model.jsontypes import from_json
from pmuprof.model.processlist import parse
from pmuprof.model.server import ServerFacts, StatusFacts
from pmuprof.model.window import FACTS_OWN, POLL_OWN, Activity, CounterWindow, Point, window_of

INCIDENTS = Path(__file__).resolve().parents[1] / "data" / "incidents" / "mariadb1011"


def _window(before: dict, after: dict, seconds: float = 5.0, own: dict | None = None) -> CounterWindow:
    return CounterWindow((Point(0.0, before), Point(seconds, after)), own or {})


def test_a_counter_is_read_as_its_growth_less_pmuprofs_own() -> None:
    w = _window(
        {"Opened_tables": 100, "Created_tmp_disk_tables": 10},
        {"Opened_tables": 600, "Created_tmp_disk_tables": 16},
        own={"Created_tmp_disk_tables": 8},
    )
    assert w.delta("Opened_tables") == 500 and w.rate("Opened_tables") == 100
    assert w.delta("Created_tmp_disk_tables") == 0  # all of it pmuprof's own: never below zero
    assert w.delta("Missing") is None and w.rate("Missing") is None


def test_a_counter_that_went_down_has_no_delta() -> None:
    w = _window({"Questions": 1000}, {"Questions": 10})  # FLUSH STATUS or a restart inside the window
    assert w.delta("Questions") is None and w.rate("Questions") is None


def test_ratio_and_gauges() -> None:
    w = CounterWindow(
        (
            Point(0.0, {"Table_open_cache_misses": 0, "Table_open_cache_hits": 0, "Innodb_history_list_length": 10}),
            Point(1.0, {"Innodb_history_list_length": 15}),
            Point(2.0, {"Table_open_cache_misses": 95, "Table_open_cache_hits": 5, "Innodb_history_list_length": 12}),
        )
    )
    assert w.ratio("Table_open_cache_misses", "Table_open_cache_hits") == 19
    assert w.levels("Innodb_history_list_length") == [10, 15, 12]
    assert w.growth("Innodb_history_list_length") == 2 and w.rising_share("Innodb_history_list_length") == 0.5
    assert w.ratio("Table_open_cache_hits", "Nothing") is None
    with pytest.raises(ValueError):
        CounterWindow((Point(0.0, {}),))


def test_mysql_json_gives_the_window_with_the_poller_subtracted_on_mariadb() -> None:
    status = StatusFacts(5.0, {"Created_tmp_disk_tables": "100", "Uptime": "9"}, {"Created_tmp_disk_tables": "107"})
    server = from_json(ServerFacts, {"reachable": True, "server": {"family": "mariadb"}})
    server = ServerFacts(True, server=server.server, status=status)
    w = window_of(server, None)
    assert w is not None and w.seconds == 5.0
    # no processlist.tsv: the poller is taken to have run, at most once a second and once more
    assert (
        w.own["Created_tmp_disk_tables"]
        == FACTS_OWN["Created_tmp_disk_tables"] + 6 * POLL_OWN["Created_tmp_disk_tables"]
    )
    assert w.rate("Created_tmp_disk_tables") == 0  # an idle server's own footprint reads as nothing
    polled = Activity(3, {}, {}, "processlist.tsv, 3 polls")
    assert window_of(server, polled).own["Created_tmp_disk_tables"] == 2 + 3  # type: ignore[union-attr]
    assert window_of(None, None) is None and window_of(ServerFacts(False), None) is None


def test_activity_counts_polls_with_a_matching_thread() -> None:
    text = (
        "# pmuprof processlist: second\ttid\tid\tuser\tdb\tcommand\tstate\ttime\tdigest\n"
        "10\t1\t5\tu\td\tQuery\taltering table\t0\tALTER TABLE t FORCE\n"
        "10\t2\t6\tu\td\tQuery\tWaiting for table metadata lock\t0\tUPDATE t SET c = ?\n"
        "11\t1\t5\tu\td\tQuery\tcopy to tmp table\t1\tALTER TABLE t FORCE\n"
        "12\t3\t7\tu\td\tQuery\tSending data\t0\tSELECT c FROM t\n"
    )
    a = Activity.of_polled(parse(text), polls=4)  # the poller's series: 4 seconds polled, one found nothing
    assert a.polls == 4 and a.share(["altering table", "copy to tmp table"]) == (0.5, 0.5)
    assert a.share(["ALTER TABLE*"], "statements") == (0.5, 0.5)
    assert a.share(["waiting for table metadata lock"]) == (0.25, 0.25)
    assert Activity.of_snapshot({"statistics": 3, "(none)": 0}).share(["statistics"]) == (1.0, 3.0)


def test_a_recorded_run_directory_gives_its_window() -> None:
    path = INCIDENTS / "table_cache"
    profile = rundir.load_run_dir(path)
    assert profile.activity is not None and profile.activity.polls >= 5
    w = window_of(profile.server, profile.activity)
    assert w is not None and w.rate("Table_open_cache_misses") > 1000  # type: ignore[operator]

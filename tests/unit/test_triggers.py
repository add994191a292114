"""Trigger language, disk floors and the watch state machine (pt-stalk semantics)."""

from __future__ import annotations

import pytest

from pmuprof.errors import UsageError
from pmuprof.workflows.triggers import (
    Condition,
    DiskFloor,
    Poll,
    WatchPlan,
    captured,
    cpu_percent,
    done,
    holds,
    initial_state,
    missing_status,
    parse_condition,
    parse_duration,
    parse_proc_stat,
    parse_size,
    skipped,
    status_line,
    step,
    value,
)


@pytest.mark.parametrize(
    "text, source, name, op, threshold",
    [
        ("Threads_running>50", "status", "Threads_running", ">", 50.0),
        (" Threads_running >= 50 ", "status", "Threads_running", ">=", 50.0),
        ("state:statistics>=10", "state", "statistics", ">=", 10.0),
        ("state:Sending data > 3", "state", "Sending data", ">", 3.0),
        ("STATE:statistics>=10", "state", "statistics", ">=", 10.0),
        ("command:Query>40", "command", "Query", ">", 40.0),
        ("cpu>80", "cpu", "cpu", ">", 80.0),
        ("CPU>=150.5", "cpu", "cpu", ">=", 150.5),
        ("Innodb_row_lock_current_waits!=0", "status", "Innodb_row_lock_current_waits", "!=", 0.0),
        ("Threads_connected<5", "status", "Threads_connected", "<", 5.0),
    ],
)
def test_parse_condition_accepts(text, source, name, op, threshold):
    cond = parse_condition(text)
    assert (cond.source, cond.name, cond.op, cond.threshold) == (source, name, op, threshold)


@pytest.mark.parametrize(
    "text, words",
    [
        ("", "expected NAME OP NUMBER"),
        ("Threads_running", "expected NAME OP NUMBER"),
        ("Threads_running>", "expected NAME OP NUMBER"),
        ("Threads_running>fifty", "not a number"),
        ("Threads_running>5 0", "not a number"),
        ("Threads running>50", "not a status variable"),
        ("1abc>3", "not a status variable"),
        ("foo:bar>1", "unknown prefix"),
        ("state:>1", "bad processlist state"),
        ("state:a;b>1", "bad processlist state"),
        ("cpu>-1", "cannot be negative"),
        ("Threads_running=>50", "not a status variable"),
    ],
)
def test_parse_condition_rejects_with_one_line(text, words):
    with pytest.raises(UsageError) as err:
        parse_condition(text)
    assert words in str(err.value)
    assert "\n" not in str(err.value)


def test_slug_is_file_name_safe():
    assert parse_condition("Threads_running>50").slug == "Threads_running-gt-50"
    assert parse_condition("state:Sending data>=2.5").slug == "Sending_data-ge-2_5"
    assert parse_condition("cpu>80").slug == "cpu-gt-80"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("4096", 4096),
        ("1K", 1024),
        ("500M", 500 * 2**20),
        ("1G", 2**30),
        ("1.5GiB", int(1.5 * 2**30)),
        ("5g", 5 * 2**30),
        ("2T", 2 * 2**40),
        ("1GB", 2**30),
    ],
)
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "G", "1X", "-1G", "1 G G"])
def test_parse_size_rejects(text):
    with pytest.raises(UsageError):
        parse_size(text)


@pytest.mark.parametrize("text, expected", [("1s", 1.0), ("500ms", 0.5), ("5m", 300.0), ("2h", 7200.0), ("10", 10.0)])
def test_parse_duration(text, expected):
    assert parse_duration(text) == expected


def test_parse_duration_rejects():
    for bad in ("1w", "1 day", "d"):  # days are `7d` (retention ages); weeks are not a unit
        with pytest.raises(UsageError):
            parse_duration(bad)


def test_disk_floor_bytes_and_percent():
    floor = DiskFloor.parse(("1G", "5%", "100M"))
    assert floor == DiskFloor(bytes=2**30, percent=5.0)
    assert floor.violation(free=2 * 2**30, total=10 * 2**30) is None
    assert "MiB free" in floor.violation(free=2**29, total=10 * 2**30)
    assert "% free" in floor.violation(free=2 * 2**30, total=100 * 2**30)
    with pytest.raises(UsageError):
        DiskFloor.parse(("150%",))


def test_values_of_each_source():
    poll = Poll(
        0.0,
        status={"Threads_running": 60.0},
        states={"statistics": 7, "Statistics": 4, "Sending data": 1},
        commands={"Query": 12},
        cpu=95.0,
    )
    assert value(parse_condition("Threads_running>50"), poll) == 60.0
    assert value(parse_condition("state:statistics>=10"), poll) == 11.0  # case-insensitive
    assert value(parse_condition("state:Locked>=1"), poll) == 0.0  # absent state = 0 threads
    assert value(parse_condition("command:query>1"), poll) == 12.0
    assert value(parse_condition("cpu>80"), poll) == 95.0
    assert holds(parse_condition("state:statistics>=10"), poll)
    assert not holds(parse_condition("cpu>80"), Poll(0.0))  # unknown CPU never fires
    assert missing_status((parse_condition("Nope>1"), parse_condition("Threads_running>1")), poll) == ["Nope"]


def _polls(values, start=0.0):
    return [Poll(start + i, status={"Threads_running": float(v)}) for i, v in enumerate(values)]


def _run(plan, polls, capture_s=0.0):
    """Drive the state machine; each capture takes capture_s seconds of poll time."""
    state, fired = initial_state(plan), []
    for poll in polls:
        state, fire = step(plan, state, poll)
        if fire:
            fired.append((poll.t, fire))
            state = captured(plan, state, poll.t + capture_s)
    return state, fired


def test_fires_after_n_consecutive_polls_only():
    plan = WatchPlan((parse_condition("Threads_running>50"),), cycles=3, cooldown_s=100, max_captures=5)
    # a two-poll spike does not fire; the three-poll run fires on its third poll
    _, fired = _run(plan, _polls([10, 60, 70, 10, 60, 61, 62, 63]))
    assert [t for t, _ in fired] == [6.0]
    fire = fired[0][1]
    assert fire.hits == 3 and fire.capture_index == 1
    assert [p.status["Threads_running"] for p in fire.polls][-3:] == [60.0, 61.0, 62.0]


def test_cooldown_and_max_captures_hold():
    plan = WatchPlan((parse_condition("Threads_running>50"),), cycles=2, cooldown_s=5, max_captures=2)
    state, fired = _run(plan, _polls([99] * 40), capture_s=3)
    # fire at t=1; capture ends t=4, cooldown to t=9; hits restart at 9 → fire at t=10; then cap
    assert [t for t, _ in fired] == [1.0, 10.0]
    assert done(plan, state)


def test_unlimited_captures_keep_firing_after_each_cooldown():
    """The CLI's default (pt-stalk's --iterations): no cap; only the cooldown spaces the captures."""
    plan = WatchPlan((parse_condition("Threads_running>50"),), cycles=2, cooldown_s=5, max_captures=None)
    state, fired = _run(plan, _polls([99] * 40), capture_s=3)
    assert [t for t, _ in fired] == [1.0, 10.0, 19.0, 28.0, 37.0] and not done(plan, state)
    assert status_line(plan, state, Poll(40.0)).endswith("captures 5 · cooling down 5 s")


def test_watch_cli_captures_without_a_cap_by_default():
    from pmuprof.cli.watch import watch_cmd

    option = next(p for p in watch_cmd.params if p.name == "max_captures")
    assert option.default is None


def test_any_condition_fires_and_is_named():
    plan = WatchPlan((parse_condition("Threads_running>50"), parse_condition("cpu>80")), cycles=2, max_captures=1)
    polls = [Poll(i, status={"Threads_running": 1.0}, cpu=90.0) for i in range(3)]
    _, fired = _run(plan, polls)
    assert fired[0][1].condition.source == "cpu"
    record = fired[0][1].to_dict(plan)
    assert record["condition"] == "cpu>80" and record["cycles"] == 2
    assert record["polls_before"][-1]["values"] == {"Threads_running>50": 1.0, "cpu>80": 90.0}


def test_skipped_capture_cools_down_without_counting():
    plan = WatchPlan((parse_condition("Threads_running>50"),), cycles=1, cooldown_s=10, max_captures=1)
    state, fire = step(plan, initial_state(plan), Poll(0.0, status={"Threads_running": 99.0}))
    assert fire is not None
    state = skipped(plan, state, 0.0)
    assert state.captures == 0 and not done(plan, state)
    _, again = step(plan, state, Poll(5.0, status={"Threads_running": 99.0}))
    assert again is None
    _, again = step(plan, state, Poll(10.0, status={"Threads_running": 99.0}))
    assert again is not None


def test_window_keeps_at_least_cycles_polls():
    plan = WatchPlan((parse_condition("Threads_running>0"),), cycles=15, keep_polls=4, max_captures=1)
    state = initial_state(plan)
    for poll in _polls([0] * 30):
        state, _ = step(plan, state, poll)
    assert len(state.window) == 15


@pytest.mark.parametrize("kwargs", [dict(cycles=0), dict(max_captures=0), dict(cooldown_s=-1)])
def test_plan_rejects_bad_caps(kwargs):
    with pytest.raises(UsageError):
        WatchPlan((parse_condition("Threads_running>1"),), **kwargs)
    with pytest.raises(UsageError):
        WatchPlan(())


def test_proc_stat_and_cpu_percent():
    text = "1234 (my (weird) proc) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 30 0 777 0 0\n"
    assert parse_proc_stat(text) == (300, 777)
    assert cpu_percent(300, 10.0, 500, 11.0, 100) == pytest.approx(200.0)
    assert cpu_percent(300, 10.0, 300, 10.0, 100) is None
    assert cpu_percent(300, 10.0, 200, 11.0, 100) is None  # pid reused: counters went backwards


def test_condition_is_frozen():
    cond = Condition("status", "x", ">", 1.0, "x>1")
    with pytest.raises(AttributeError):  # dataclasses.FrozenInstanceError
        cond.name = "y"  # type: ignore[misc]


def test_status_line_shows_values_hits_and_cooldown():
    plan = WatchPlan(
        (parse_condition("Threads_running>50"), parse_condition("cpu>80")), cycles=3, cooldown_s=30, max_captures=2
    )
    state, _ = step(plan, initial_state(plan), Poll(100.0, status={"Threads_running": 60.0}))
    line = status_line(plan, state, Poll(100.0, status={"Threads_running": 60.0}))
    assert "Threads_running>50: 60 (1/3); cpu>80: ? (0/3) · captures 0/2" in line
    cooled = captured(plan, state, 100.0)
    assert "cooling down 30 s" in status_line(plan, cooled, Poll(100.0))

"""Parsers of perf stat CSV, evlist -v and the record summary."""

from pmuprof.model.counters import Counters, base_event, event_name
from pmuprof.model.jsontypes import from_json
from pmuprof.tools.perf import parse as perfparse

STAT = """403.98,msec,task-clock,403982429,100.00,2.000,CPUs utilized
52,,context-switches,403981627,100.00,128.718,/sec
<not supported>,,cycles,0,100.00,,
1000,,instructions,500,50.00,,
"""


def test_stat_rows_mark_unsupported_and_multiplexed():
    rows = {r["event"]: r for r in perfparse.parse_stat_csv(STAT)}
    assert rows["task-clock"]["value"] == 403.98 and rows["task-clock"]["unit"] == "msec"
    assert rows["cycles"]["supported"] is False and rows["cycles"]["status"] == "<not supported>"
    assert rows["instructions"]["running_pct"] == 50.0


def _counters(rows: list[dict]) -> Counters:
    return from_json(Counters, {"events": [{k: v for k, v in r.items() if v is not None} for r in rows]})


def test_ipc_only_when_both_counted():
    assert _counters(perfparse.parse_stat_csv(STAT)).ipc() is None
    rows = perfparse.parse_stat_csv("2000,,cycles,1,100.00,,\n1000,,instructions,1,100.00,,\n")
    assert _counters(rows).ipc() == 0.5


def test_ipc_per_process_else_the_stored_one():
    both = from_json(
        Counters,
        {
            "events": [
                {"event": "cycles", "value": 4000, "process": "mysqld"},
                {"event": "instructions", "value": 1000, "process": "mysqld"},
                {"event": "cpu/cycles/u", "value": 3000, "process": "mariadbd"},
                {"event": "inst_retired.any", "value": 4000, "process": "mariadbd"},
                {"event": "cycles", "value": 0, "process": "idle"},
                {"event": "instructions", "value": 5, "process": "idle"},
            ],
            "derived": {"ipc": 9.0},
        },
    )
    assert both.ipc_by_process() == {"mariadbd": 1.333, "mysqld": 0.25}
    assert both.ipc("mysqld") == 0.25 and both.ipc() == 1005 / 4000  # exact names first, as Counters.value reads them
    stored = from_json(Counters, {"events": [{"event": "cycles", "value": 10}], "derived": {"ipc": 0.52345}})
    assert stored.ipc() == 0.52345 and stored.ipc("x") is None and stored.ipc_by_process() == {"": 0.523}


def test_evlist_reveals_cpu_clock_substitution():
    text = (
        "cpu-clock:ppp: type: 1, size: 128, { sample_period, sample_freq }: 999, sample_type: IP|TID\n"
        "dummy:HG: type: 1, size: 128, config: 0x9\n"
    )
    events = perfparse.parse_evlist(text)
    assert events[0]["name"] == "cpu-clock:ppp" and events[0]["type"] == 1
    assert event_name(events[0]["name"]) == "cpu-clock"


def test_record_summary_line():
    err = "[ perf record: Woken up 1 times to write data ]\n[ perf record: Captured and wrote 0.116 MB d (555 samples) ]\n"
    assert perfparse.parse_record_stderr(err) == {"data_mb": 0.116, "samples_total": 555, "lost": 0}


def test_event_names_without_modifiers_and_the_counter_they_count():
    assert [event_name(e) for e in ("cpu-clock:ppH", "cycles:P", "cpu/cycles/u", " r40cc ")] == [
        "cpu-clock",
        "cycles",
        "cpu/cycles/u",
        "r40cc",
    ]
    assert [base_event(e) for e in ("cpu-clock:ppH", "cpu/cycles/u", "cpu-cycles:P", "Instructions:u")] == [
        "cpu-clock",
        "cycles",
        "cycles",
        "instructions",
    ]

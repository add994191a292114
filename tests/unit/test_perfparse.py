"""Parsers of perf stat CSV, evlist -v and the record summary."""

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


def test_ipc_only_when_both_counted():
    assert perfparse.derived(perfparse.parse_stat_csv(STAT)) == {}
    rows = perfparse.parse_stat_csv("2000,,cycles,1,100.00,,\n1000,,instructions,1,100.00,,\n")
    assert perfparse.derived(rows) == {"ipc": 0.5}


def test_evlist_reveals_cpu_clock_substitution():
    text = ("cpu-clock:ppp: type: 1, size: 128, { sample_period, sample_freq }: 999, sample_type: IP|TID\n"
            "dummy:HG: type: 1, size: 128, config: 0x9\n")
    events = perfparse.parse_evlist(text)
    assert events[0]["name"] == "cpu-clock:ppp" and events[0]["type"] == 1
    assert perfparse.event_base(events[0]["name"]) == "cpu-clock"


def test_record_summary_line():
    err = "[ perf record: Woken up 1 times to write data ]\n[ perf record: Captured and wrote 0.116 MB d (555 samples) ]\n"
    assert perfparse.parse_record_stderr(err) == {"data_mb": 0.116, "samples_total": 555, "lost": 0}

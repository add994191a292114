"""model/activity.py: the processlist polls over the window, which the ``window`` rules read beside the counters."""

from __future__ import annotations

from pmuprof.model.activity import Activity, statement_kind
from pmuprof.model.processlist import parse


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
    assert a.share(["nothing"]) == (0.0, 0.0)
    assert Activity.of_snapshot({"statistics": 3, "(none)": 0}).share(["statistics"]) == (1.0, 3.0)
    assert Activity().share(["statistics"]) == (0.0, 0.0)  # no polls: no share


def test_a_statement_is_known_by_its_first_three_words() -> None:
    assert statement_kind("alter table sbtest2 force") == "ALTER TABLE SBTEST2"
    assert statement_kind("") == ""

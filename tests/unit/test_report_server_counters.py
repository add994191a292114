"""The report's server counters (report/servercounters.py): status.json's key counters per second and InnoDB at
both ends in report.html, report.md and findings.json; a statement is text; a run without the file reports
exactly as before."""

from __future__ import annotations

import json
import re
from dataclasses import replace

from report_fixtures import HOSTILE_SCRIPT, findings, profile

from pmuprof.findings.diagnosis import Diagnosis
from pmuprof.model.status import InnodbState, OwnTraffic, Poll, ServerStatus, Transaction
from pmuprof.model.wincounters import WindowCounters
from pmuprof.report import build_payload, write_outputs
from pmuprof.report.servercounters import bars


def _status() -> ServerStatus:
    polls = tuple(Poll(50 + i, 50.3 + i, 1.5 + i) for i in range(4))
    values = {
        "Opened_tables": (10.0, 27810.0, 55610.0, 83410.0),
        "Threads_running": (3.0, 9.0, 4.0, 3.0),
        "Innodb_history_list_length": (1000.0, 1900.0, 2800.0, 3700.0),
        "Created_tmp_disk_tables": (0.0, 1.0, 2.0, 3.0),
    }
    first = {k: str(int(v[0])) for k, v in values.items()} | {"Com_stmt_execute": "7", "Version": "x"}
    last = {k: str(int(v[-1])) for k, v in values.items()} | {"Com_stmt_execute": "7", "Version": "x"}
    holder = Transaction(
        trx_id="421", age_s=340, thread_id=12, statement=f"SELECT ? FROM t {HOSTILE_SCRIPT}", command="Sleep"
    )
    holder = replace(holder, idle_s=338, user="app", isolation="REPEATABLE READ", read_view=True, view_sees_below=1200)
    waiter = Transaction(
        trx_id="99", state="LOCK WAIT", age_s=3, thread_id=13, wait_s=2, statement="UPDATE t SET a = ?"
    )
    states = (
        InnodbState(when="start", history_length=1000, history_source="Innodb_history_list_length", oldest=(holder,)),
        InnodbState(
            when="end", history_length=3700, transactions=2, lock_waits=1, oldest=(holder, waiter), waiting=(waiter,)
        ),
    )
    own = (OwnTraffic("processlist", (50.8, 51.8, 52.8), 3, {"Created_tmp_disk_tables": 3.0}),)
    return ServerStatus(pid=123, polls=polls, values=values, first=first, last=last, innodb=states, own=own)


def test_the_section_shows_rates_levels_and_innodb_in_every_output(tmp_path):
    prof = replace(profile(), status=_status())
    paths = write_outputs(prof, Diagnosis.of(findings()), tmp_path)
    html = paths["html"].read_text()
    begin = html.index('<section id="server-counters">')
    section = html[begin : html.index("</section>", begin)]
    assert "<code>Opened_tables</code>" in section and "27,800" in section  # a rate per second
    assert "1,000 → 3,700" in section  # a level's first and last
    assert "Created_tmp_disk_tables" in html and "<code>Com_stmt_execute</code>" in section  # did not move
    assert "thread 12 (app), trx 421, 340 s old, idle in its transaction for 338 s" in section
    assert "read view sees ids below 1200" in section and "waiting for a lock for 2 s" in section
    assert "<img" not in section and "&lt;/script&gt;&lt;img" in section  # the statement is text
    assert '<a href="#server-counters">' in html
    md = paths["md"].read_text()
    assert "### Server counters" in md and "| `Opened_tables` | 27,800.00 /s |" in md
    assert "oldest transaction: thread 12 (app)" in md
    part = json.loads(paths["json"].read_text())["profile"]["server_counters"]
    window = WindowCounters.of(_status())
    assert part["counters"]["Opened_tables"]["value"] == round(window.rate("Opened_tables"), 3)
    assert {"Com_stmt_execute", "Created_tmp_disk_tables"} <= set(part["idle"])  # the poller's alone: taken out
    assert part["innodb"]["end"]["lock_waits"] == 1 and part["innodb"]["start"]["oldest"].startswith("thread 12")


def test_a_run_without_status_json_reports_as_before(tmp_path):
    prof = profile()
    payload = build_payload(prof, Diagnosis.of(findings()))
    assert payload.server_counters is None and "server_counters" not in payload.as_json()
    paths = write_outputs(prof, Diagnosis.of(findings()), tmp_path)
    assert "server-counters" not in paths["html"].read_text()
    assert "Server counters" not in paths["md"].read_text()
    assert "server_counters" not in json.loads(paths["json"].read_text())["profile"]


def test_per_second_marks_scale_to_the_busiest_second_and_stay_short():
    assert bars([0, 1, 2, 4, 8]) == "▁▂▃▅█" and bars([0, 0]) == "▁▁" and bars([]) == ""
    long = bars([float(i % 7) for i in range(600)])
    assert len(long) == 60 and re.fullmatch("[▁▂▃▄▅▆▇█]+", long)

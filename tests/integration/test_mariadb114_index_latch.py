"""The index-tree-latch rule on a real MariaDB 11.4.5 (DWARF) under sysbench oltp_write_only.

At innodb_spin_wait_delay = 200 the writers spin on dict_index_t::lock (named by the inline chain
mtr_t::s_lock / mtr_t::index_lock_upgrade at the wait's call site): the rule must fire and its first
fix must restore the delay (the capture at 200 is the session's, tests/integration/conftest.py). The
second capture is that fix applied to the same write load: at the default delay it spins so little that
the rule stays quiet or says info. Assertions are on the rule's decisions, not on shares (a loaded 2-core
host moves them a lot; the shares are printed).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from helpers import capture_under, fix_text, need_perf
from pmuprof.findings.steps import sql_statements
import mariadb as mdb

DEFAULT_DELAY = 4  # MariaDB >= 10.3.5


def _capture(server: mdb.MariaDB, load: mdb.SysbenchLoad, out: Path) -> dict:
    """Findings of a 4 s on-CPU capture of the running writers at the default delay; the load stops when the
    recording ends (capture_under)."""
    mdb.sql(server, f"SET GLOBAL innodb_spin_wait_delay = {DEFAULT_DELAY}")
    args = ("-p", str(server.pid), "-d", "4", "-F", "499", "--no-off-cpu", "--no-keep-perf-data")
    args += ("--defaults-file", str(server.defaults_file))  # findings.json is read, not perf.data nor binaries
    res = capture_under(load, out, *args)
    assert res.returncode == 0, res.stderr
    return json.loads((out / "findings.json").read_text())


def _index_latch(findings: dict) -> dict | None:
    return next((f for f in findings["findings"] if f["rule"] == "index-tree-latch"), None)


def _statements(finding: dict, database: str) -> list[str]:
    """The statements of the fix's sql steps, comments cut, the example table named as a real one."""
    statements, _ = sql_statements(fix_text(finding, "sql"))
    return [
        st.replace("db.tbl", f"{database}.sbtest1")
        for st in statements
        if re.match(r"(SET GLOBAL|SELECT|ALTER TABLE) ", st)
    ]


def _summary(findings: dict) -> str:
    latch = next((r for r in findings["latches"] if r["latch"] == "index_lock"), None)
    rules = [(f["rule"], f["severity"], round(f["share"], 3)) for f in findings["findings"]]
    return f"index_lock share {latch['share'] if latch else 0}; findings {rules}"


def test_index_latch_fires_at_a_raised_spin_delay_and_not_at_the_default(mariadb114, mariadb114_spin200, tmp_path):
    need_perf()
    # index-latch spinning comes in bursts (page splits): 1.2-20 % of 5 s captures at delay 200 here, so the
    # capture at delay 200 (the session's, shared with the latch-table test) averages over 8 s; at the default
    # delay it stayed under 0.5 %
    raised = json.loads((mariadb114_spin200 / "findings.json").read_text())
    load = mdb.SysbenchLoad(mariadb114, mdb.UNTIL_STOPPED, "oltp_write_only", 16)
    try:
        load.connected()
        default = _capture(mariadb114, load, tmp_path / "default")
    finally:
        load.stop()
        mdb.sql(mariadb114, f"SET GLOBAL innodb_spin_wait_delay = {DEFAULT_DELAY}")
    print(f"delay 200: {_summary(raised)}\ndefault: {_summary(default)}")

    fired = _index_latch(raised)
    assert fired is not None, _summary(raised)
    assert fired["fix"][0]["kind"] == "sql", fired["fix"]
    assert fired["fix"][0]["text"].startswith(f"SET GLOBAL innodb_spin_wait_delay = {DEFAULT_DELAY};"), fired["fix"]
    assert "innodb_spin_wait_delay is 200" in fired["message"], fired["message"]

    quiet = _index_latch(default)
    assert quiet is None or quiet["severity"] == "info", _summary(default)
    assert quiet is None or "innodb_spin_wait_delay = " not in fix_text(quiet), quiet["fix"]

    # every SQL line the finding emits runs on 11.4.5 (the example table is sbtest1)
    statements = _statements(fired, mariadb114.database)
    assert any(st.startswith("SET GLOBAL innodb_fill_factor") for st in statements), statements
    try:
        for statement in statements:
            mdb.sql(mariadb114, statement)
    finally:
        mdb.sql(
            mariadb114, f"SET GLOBAL innodb_spin_wait_delay = {DEFAULT_DELAY}", "SET GLOBAL innodb_fill_factor = 100"
        )

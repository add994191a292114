"""A bare perf.data of a real MariaDB 11.4.5 reported without server facts (issue 22, items 4 and 5).

16 writers with innodb_spin_wait_delay = 200 (the issue's capture), recorded by plain `perf record -g`
and reported as brought from elsewhere: the version must come from the binary, the delay must be said
unknown (not printed as the default), only 11.4's fixes may be printed, and no placeholder may reach
findings.json, report.md or report.html.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from helpers import fix_text, need_perf, run_cli
from shared import cpus_held
from placeholders import finding_texts, placeholders, visible
from pmuprof.findings.loader import load_rules
from pmuprof.findings.versions import in_range
from pmuprof.model.server import for_family
from tests import mariadb as mdb


@pytest.fixture(scope="module")
def offline_report(mariadb114, tmp_path_factory):
    perf = need_perf()
    work = tmp_path_factory.mktemp("m114-offline")
    data, out = work / "perf.data", work / "report"
    mdb.sql(mariadb114, "SET GLOBAL innodb_spin_wait_delay = 200")
    # the 4 s sysbench run is perf's workload: the recording (of the server, -p) lasts as long as the load, from
    # its clients connecting to its summary, and no load runs unrecorded
    load = mdb.sysbench_run_argv(mariadb114, 4, "oltp_write_only", 16)
    try:
        with cpus_held():  # 16 writers flat out: no other test's flat-out load beside them
            rec = subprocess.run(
                [perf, "record", "-q", "-F", "499", "-g", "-p", str(mariadb114.pid), "-o", str(data), "--", *load],
                capture_output=True,
                text=True,
                timeout=120,
            )
    finally:
        mdb.sql(mariadb114, "SET GLOBAL innodb_spin_wait_delay = 4")
    if (rec.returncode != 0 or not data.is_file()) and not rec.stdout.strip():  # sysbench never ran: perf failed
        pytest.skip(f"perf record is not permitted here: {rec.stderr.strip()[:200]}")
    assert rec.returncode == 0 and data.is_file(), (rec.returncode, rec.stdout[-1000:], rec.stderr[-1000:])
    result = mdb.parse_sysbench(rec.stdout, "oltp_write_only", 16)
    assert result.tps > 0 and result.errors == 0, result
    res = run_cli("report", str(data), "-o", str(out))
    assert res.returncode == 0, res.stderr
    return out, json.loads((out / "findings.json").read_text())


def test_the_version_is_read_from_the_binary(offline_report):
    out, doc = offline_report
    assert (doc["profile"]["server_version"], doc["profile"]["server_version_from"]) == ("11.4.5-MariaDB", "binary")
    assert "11.4.5-MariaDB, read from its binary; variables and status unknown" in (out / "report.md").read_text()
    assert {f["evidence"]["server"] for f in doc["findings"]} == {"MariaDB 11.4.5-MariaDB"}


def test_the_spin_delay_is_said_unknown_and_the_restore_is_offered(offline_report):
    _, doc = offline_report
    spin = next((f for f in doc["findings"] if f["rule"] == "innodb-spin-wait"), None)
    assert spin is not None, [(f["rule"], f["share"]) for f in doc["findings"]]
    assert "at the default innodb_spin_wait_delay 4 (the server's value is not known" in spin["message"]
    assert "srw_pause" in spin["message"] and "ut_delay" not in spin["message"]  # 11.4 has no ut_delay
    assert "SHOW GLOBAL VARIABLES LIKE 'innodb_spin_wait_delay'" in fix_text(spin, "sql")
    assert any("innodb_spin_wait_delay unknown" in m for m in spin["missing"])


def test_only_the_detected_versions_fixes(offline_report):
    """With the version known, fix variants of other versions are left out: each step comes from a variant
    for any server or for 11.4.5."""
    _, doc = offline_report
    whens = {(rule.id, item.applies_to): item.when for rule in load_rules() for item in rule.fix}
    wrong = [
        (f["rule"], s["applies_to"])
        for f in doc["findings"]
        for s in f["fix"]
        if whens[(f["rule"], s["applies_to"])] is not None
        and not in_range((11, 4, 5), for_family(whens[(f["rule"], s["applies_to"])], "mariadb") or "<0")
    ]
    assert not wrong and [s for f in doc["findings"] for s in f["fix"]], wrong


def test_no_placeholder_reaches_any_output(offline_report):
    out, doc = offline_report
    bad = [f"findings.json {where}: {p}" for where, text in finding_texts(doc) for p in placeholders(text)]
    bad += [f"report.md: {p}" for p in placeholders((out / "report.md").read_text())]
    bad += [f"report.html: {p}" for p in placeholders(visible((out / "report.html").read_text()))]
    assert not bad, "\n".join(bad)

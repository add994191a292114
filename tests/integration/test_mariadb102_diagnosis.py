"""Diagnoses on a real MariaDB 10.2.11 (full symbols, frame pointers) under the seeds' loads (issue 9).

Each scenario runs real sysbench load, captures it live with ``pmuprof capture`` and checks what
the findings say: the latch the spin is for, the severity, the cause → consequence grouping, and
that every fix is one 10.2.11 accepts. Shares move with the host's load, so the checks are about
which latch and which rule, and about bounds far from the measured values (examples/ has one
annotated capture; docs/rules.md has each rule's thresholds).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from helpers import capture_under, fix_text, held_at_info, held_below, need_perf, workload_findings
import mariadb as mdb
from pmuprof.findings.loader import load_rules

# 4 s at 299 Hz: the samples of 6 s at 199 (a share's noise is its sample count's), in two thirds of the time
SECONDS, FREQUENCY = 4, 299
# Not in 10.2.11 (SHOW VARIABLES / SHOW DATABASES on the fixture server, test_mariadb102_server.py)
REJECTED = (
    "eq_range_index_dive_limit",
    "innodb_spin_wait_pause_multiplier",
    "innodb_log_spin_wait_delay",
    "sys.",
    "performance_schema.metadata_locks",
)


class Scenario:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.data = workload_findings(json.loads((out / "findings.json").read_text()))
        self.findings = {f["rule"]: f for f in self.data["findings"]}
        self.latches = self.data["latches"]

    def level(self, rule: str) -> str:
        return self.findings[rule]["severity"] if rule in self.findings else "quiet"

    def top_latch(self) -> str:
        named = [row for row in self.latches if row["latch"] != "unidentified"]
        return named[0]["latch"] if named else ""


def _capture(server: mdb.MariaDB, out: Path, spin_delay: int, load: dict[str, Any]) -> Scenario:
    need_perf()
    mdb.sql(server, f"SET GLOBAL innodb_spin_wait_delay = {spin_delay}")
    running = mdb.SysbenchLoad(server, mdb.UNTIL_STOPPED, **load)
    try:
        running.connected()
        args = ("-p", str(server.pid), "-d", str(SECONDS), "-F", str(FREQUENCY))
        args += ("--defaults-file", str(server.defaults_file))
        args += ("--no-keep-perf-data",)  # findings are what is read: no binaries kept for a report elsewhere
        res = capture_under(running, out, *args)
    finally:
        running.stop()
        mdb.sql(server, "SET GLOBAL innodb_spin_wait_delay = 6")
    assert res.returncode == 0, res.stderr
    return Scenario(out)


@pytest.fixture(scope="module")
def dive_in(mariadb102, tmp_path_factory) -> Scenario:
    """Index dives over IN lists (100 values per column), innodb_spin_wait_delay raised to 200."""
    return _capture(
        mariadb102,
        tmp_path_factory.mktemp("m102") / "dive-in",
        200,
        dict(test=str(mdb.INDEX_DIVE_LUA), threads=16, script_args=("--range-width=0", "--ranges=100")),
    )


@pytest.fixture(scope="module")
def dive_ranges(mariadb102, tmp_path_factory) -> Scenario:
    """Index dives over wide BETWEEN ranges, innodb_spin_wait_delay raised to 200."""
    return _capture(
        mariadb102,
        tmp_path_factory.mktemp("m102") / "dive-ranges",
        200,
        dict(test=str(mdb.INDEX_DIVE_LUA), threads=16, script_args=()),
    )


@pytest.fixture(scope="module")
def write200(mariadb102, tmp_path_factory) -> Scenario:
    return _capture(
        mariadb102, tmp_path_factory.mktemp("m102") / "write-200", 200, dict(test="oltp_write_only", threads=16)
    )


@pytest.fixture(scope="module")
def write6(mariadb102, tmp_path_factory) -> Scenario:
    return _capture(
        mariadb102, tmp_path_factory.mktemp("m102") / "write-6", 6, dict(test="oltp_write_only", threads=16)
    )


@pytest.fixture(scope="module")
def point_select(mariadb102, tmp_path_factory) -> Scenario:
    return _capture(mariadb102, tmp_path_factory.mktemp("m102") / "point", 6, dict(test="oltp_point_select", threads=8))


def _statements(finding: dict) -> str:
    """The fix's sql and my.cnf steps without their comments (a comment may name what is missing)."""
    code = fix_text(finding, "sql") + "\n" + fix_text(finding, "my.cnf")
    return "\n".join(re.split(r"--|#", line)[0] for line in code.splitlines())


@pytest.mark.parametrize("name", ["dive_in", "dive_ranges", "write200", "write6", "point_select"])
def test_every_fix_is_one_10_2_11_accepts(name, request) -> None:
    scenario: Scenario = request.getfixturevalue(name)
    for f in scenario.data["findings"]:
        assert not [word for word in REJECTED if word in _statements(f)], (f["rule"], f["fix"])
        # a stack rule's severity rests on its share of the samples; a rule graded on anything else on that: an
        # off-CPU rule's on the threads it finds blocked, whatever share of all off-CPU time that is (its own
        # threshold, tested where the wait is made), purge-lag's on the history's growth in the server's counters
        # (seen: 105 a second beside write200's 899 row changes a second, a warning with no samples behind it)
        on_samples = (f.get("confidence") or {}).get("samples") is not None
        assert f["severity"] == "info" or not on_samples or f["share"] >= 0.01, f
    assert json.loads((scenario.out / "mysql.json").read_text())["server"]["version"].startswith("10.2.11")


def test_ahi_latch_behind_in_list_dives(dive_in: Scenario) -> None:
    """Each IN value dives into every index; the dives rebuild AHI entries under its X latch."""
    assert dive_in.top_latch() == "ahi_latch"
    # fired; its severity is the share of samples spinning on the latch, which needs dive threads running at
    # once: on a quiet host warning or critical, at load 20+ (two live units and the fast tier on 2 CPUs) info
    assert dive_in.level("adaptive-hash-index") in ("info", "warning", "critical")
    assert "innodb_adaptive_hash_index = OFF" in fix_text(dive_in.findings["adaptive-hash-index"], "sql")
    assert dive_in.findings["index-dive-cost"]["share"] > 0.3
    spin = dive_in.findings["innodb-spin-wait"]
    assert "200 × 50" in spin["message"], "10.2.11 hard-codes 50 PAUSEs per delay unit"
    # one group: the dives and the AHI latch they rebuild under (the narrower is the cause when it is
    # most of the dives), the spin a consequence; the dive finding's fix starts with turning AHI off
    dives, ahi = dive_in.findings["index-dive-cost"], dive_in.findings["adaptive-hash-index"]
    assert {dives["explained_by"], ahi["explained_by"]} in ({"", "index-dive-cost"}, {"", "adaptive-hash-index"})
    assert spin["explained_by"] in ("index-dive-cost", "adaptive-hash-index")
    assert dives["fix"][0]["kind"] == "sql" and dives["fix"][0]["text"].startswith(
        "SET GLOBAL innodb_adaptive_hash_index = OFF;"
    )
    assert dive_in.level("fil-space-get-index-dive") in ("quiet", "info")


def test_range_dives_are_an_optimizer_cost_not_a_mutex(dive_ranges: Scenario) -> None:
    """fil_space_get is called once per dive but is no hotspot: the finding is the dives' cost."""
    dives = dive_ranges.findings["index-dive-cost"]
    assert dives["severity"] in ("warning", "critical") or held_at_info(dives), dives
    assert dives["share"] > 0.3
    assert "FORCE INDEX" in fix_text(dives, "sql") and "No eq_range_index_dive_limit in this version" in fix_text(
        dives, "note"
    )
    assert dive_ranges.level("fil-space-get-index-dive") in ("quiet", "info")
    if "fil-space-get-index-dive" in dive_ranges.findings:
        assert dives["explained_by"] != "fil-space-get-index-dive"
    assert "btr_estimate_n_rows_in_range_low" in dives["chain"]


def test_write_spin_at_200_is_page_and_redo_latches(write200: Scenario) -> None:
    spin = write200.findings["innodb-spin-wait"]
    # seen: 0.81 of 881 samples in 6 s at 199 Hz (the window before 4 s at 299) on a crowded host (0.6 threads):
    # critical needs 0.25 (grade.MIN_THREADS)
    assert spin["severity"] == "critical" or held_below(spin, "critical"), spin
    assert "SET GLOBAL innodb_spin_wait_delay = 6;" in fix_text(spin, "sql")
    assert spin["explained_by"] in ("page-latch-contention", "log-sys-mutex", "srv-sys-mutex")
    named = {row["latch"] for row in write200.latches[:4]}
    assert {"buf_block_lock", "log_sys_mutex"} & named, write200.latches[:4]
    # the free list never ran dry: no LRU finding on page-latch spin
    assert write200.level("buffer-pool-lru") in ("quiet", "info")
    assert sum(r["share"] for r in write200.latches if r["latch"] == "unidentified") < 0.1


def test_write_spin_at_the_default_is_not_blamed_on_the_delay(write6: Scenario) -> None:
    spin = write6.findings.get("innodb-spin-wait")
    if spin:
        assert "innodb_spin_wait_delay = 6" not in fix_text(spin) and "above the default" not in spin["message"]
        # what the engine decides: grouped under the latch finding that explains most of it, or, when the spin
        # is spread over several latches (a loaded host: srv_sys 5 %, page 4 %, log_sys 3 % of a 12 % spin), ranked
        # after every cause above info that fired (the verdict names the latch, not the spin)
        explainers = {r.id for r in load_rules() if "innodb-spin-wait" in r.explains}
        order = [f["rule"] for f in write6.data["findings"]]
        fired = [r for r in order if r in explainers and write6.level(r) != "info"]  # causes above info
        assert spin["explained_by"] in fired or all(order.index(r) < order.index("innodb-spin-wait") for r in fired), (
            order
        )
    assert write6.top_latch() in ("srv_sys_mutex", "log_sys_mutex", "buf_block_lock", "log_sys_mutex|log_write_mutex")


def test_healthy_point_select_is_info_at_most(point_select: Scenario) -> None:
    assert {f["severity"] for f in point_select.data["findings"]} <= {"info"}
    assert all(row["share"] < 0.03 for row in point_select.latches)

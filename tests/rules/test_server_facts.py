"""What the server's counters say of a finding (issue 31): a refuted finding is set aside and never the verdict, a
bare input names the counters that would decide and claims no high confidence, a share of a nearly idle server
is not critical, and no report says "corroboration: none defined"."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path

from pmuprof.findings.engine import diagnose, evaluate
from pmuprof.report.markdown import render_markdown
from pmuprof.report.payload import build_payload

from .conftest import FIXTURES, load_fixture

SPILL = FIXTURES / "tmp-disk-tables" / "fire-mariadb1011-spill.folded"
BMOVE = FIXTURES / "ps-param-expansion" / "fire-bmove-upp.folded"
TLS_114 = FIXTURES / "connection-setup" / "fire-mariadb114-tls-churn.folded"


def _facts(path: Path) -> dict:
    return json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))


def test_a_bare_input_says_which_counters_would_decide(rules) -> None:
    """The spill's stacks without mysql.json: the rule fires on its stacks, names the counters its confirm and
    refute items read, and is at most medium."""
    profile, _ = load_fixture(SPILL, facts={})
    found = {f.rule: f for f in evaluate(profile, rules)}["tmp-disk-tables"]
    assert found.confidence is not None and found.confidence.level != "high"
    would = " ".join(found.confidence.would_decide)
    assert "Created_tmp_disk_tables" in would and "Created_tmp_tables" in would, found.confidence
    assert found.severity in ("info", "warning")  # unconfirmed: at most a warning


def test_the_same_input_with_its_counters_is_confirmed(rules) -> None:
    profile, _ = load_fixture(SPILL)
    found = {f.rule: f for f in evaluate(profile, rules)}["tmp-disk-tables"]
    assert found.confidence is not None and not found.confidence.would_decide
    assert found.confidence.confirmed and "Created_tmp_disk_tables" in found.confidence.confirmed[0]
    assert "Created_tmp_disk_tables" in found.to_dict()["evidence"]["disk"]["summary"]


def test_a_refuted_finding_is_set_aside_and_never_the_verdict(rules) -> None:
    """ps-param-expansion on MySQL 5.7 with the binary log on, but no prepared statement ran in the window."""
    facts = {
        "mysql": {
            "reachable": True,
            "server": {"version": "5.7.32-log", "family": "mysql", "version_tuple": [5, 7, 32]},
            "variables": {"log_bin": "ON", "general_log": "OFF", "slow_query_log": "OFF"},
            "status": {"interval_s": 5.0, "before": {"Com_stmt_execute": "10"}, "after": {"Com_stmt_execute": "10"}},
        }
    }
    profile, _ = load_fixture(BMOVE, facts=facts)
    diagnosis = diagnose(profile, rules)
    found = {f.rule: f for f in diagnosis.findings}["ps-param-expansion"]
    assert found.refuted and found.severity == "info" and "Set aside" in found.message, found.message
    assert found.confidence is not None and found.confidence.level == "low"
    assert diagnosis.top is None or diagnosis.top.rule != "ps-param-expansion"
    assert diagnosis.findings[-1].rule == "ps-param-expansion"  # ranked last
    executed = copy.deepcopy(facts)
    executed["mysql"]["status"]["after"]["Com_stmt_execute"] = "5010"
    profile, _ = load_fixture(BMOVE, facts=executed)
    again = {f.rule: f for f in evaluate(profile, rules)}["ps-param-expansion"]
    assert not again.refuted and again.severity != "info" and again.confidence.confirmed  # type: ignore[union-attr]


def test_a_share_of_a_nearly_idle_server_is_not_critical(rules) -> None:
    """The 11.4 TLS churn is 98 % of the samples in the handshake: critical at its real load (0.9 threads on the
    CPU); the same stacks from a server that was on the CPU 1 % of the time are information."""
    profile, headers = load_fixture(TLS_114)
    busy = {f.rule: f for f in evaluate(profile, rules)}["connection-setup"]
    assert busy.severity == headers["severity"] == "critical"
    run = profile.run
    idle = replace(profile, run=replace(run, duration_s=(run.duration_s or 1) * 200))
    quiet = {f.rule: f for f in evaluate(idle, rules)}["connection-setup"]
    assert quiet.severity == "info" and any("threads on the CPU" in m for m in quiet.missing), quiet.missing


def test_no_report_says_corroboration_none_defined(rules) -> None:
    for path in sorted(FIXTURES.glob("*/fire-*.folded"))[:60]:
        profile, _ = load_fixture(path)
        text = render_markdown(build_payload(profile, diagnose(profile, rules)))
        assert "none defined" not in text.lower(), path


def _polled_status(tid_of_row):
    """A run whose status source read the status once a second on server thread 77: its stacks, samples by
    thread and status.json."""
    from pmuprof.model.samples import Samples
    from pmuprof.model.status import OwnTraffic, Poll, ServerStatus

    stacks, _ = load_fixture(FIXTURES / "status-polling" / "fire-show-status.folded")
    st = stacks.stacks
    samples = Samples.build(range(len(st)), [tid_of_row(i, st) for i in range(len(st))], [100] * len(st), st.counts)
    own = OwnTraffic("status", tuple(100.25 + i for i in range(5)), 7, {"Com_select": 5.0}, thread=77)
    status = ServerStatus(
        polls=tuple(Poll(100 + i, 100.25 + i, 2.0) for i in range(6)),
        first={"Com_show_status": "0", "Questions": "10"},
        last={"Com_show_status": "0", "Questions": "20"},
        own=(own,),
    )
    return replace(stacks, samples=samples, status=status)


def test_pmuprofs_own_status_reads_are_left_out_of_the_status_share(rules) -> None:
    """The status rule's samples on the server thread of pmuprof's own status connection are its own reads: left
    out, the rule stays quiet; on another thread they are a client's, and it fires."""

    def on_status(i, st):  # the fixture's status reads: PFS_status_variable_cache under do_for_all_thd
        return 77 if any("status" in frame.lower() for frame in st.row(i)) else 1000 + i

    ours = _polled_status(on_status)
    assert "status-polling" not in {f.rule for f in evaluate(ours, rules)}
    theirs = _polled_status(lambda i, st: 1000 + i)
    found = {f.rule: f for f in evaluate(theirs, rules)}["status-polling"]
    assert "own_left_out" not in found.to_dict()["evidence"]["status"]

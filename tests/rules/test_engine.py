"""Engine behaviour beyond single fixtures: processes, ordering, caps, spin cost, docs, CLI."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from pmuprof.cli.main import cli
from pmuprof.findings.docs import rules_markdown
from pmuprof.findings.engine import evaluate
from pmuprof.findings.schema import EVIDENCE_KEYS
from pmuprof.model.counters import Counters
from pmuprof.model.jsontypes import from_json
from pmuprof.findings.versions import in_range, parse_version
from pmuprof.model.profile import Profile
from helpers import make_profile

from .conftest import RULES_DIR

SPIN = ("mysqld", "start_thread", "fil_space_get", "PolicyMutex<TTASEventMutex<GenericPolicy> >::enter", "ut_delay")
WORK = ("mysqld", "start_thread", "do_command", "row_search_mvcc")


def test_each_process_gets_its_own_findings(rules) -> None:
    other = tuple(["mariadbd"] + list(WORK[1:]))
    stacks = {SPIN: 3000, WORK: 7000, other: 10000, ("mariadbd", "start_thread", "ut_delay"): 50}
    findings = evaluate(Profile(stacks), rules)
    spin = [f for f in findings if f.rule == "innodb-spin-wait"]
    assert [(f.process, f.severity) for f in spin] == [("mysqld", "critical")]
    assert spin[0].share == 0.3  # of mysqld's samples, not of all
    json.dumps([f.to_dict() for f in findings])  # findings.json must serialize


def test_the_engine_adds_to_evidence_only_what_the_schema_reserves(rules) -> None:
    by_id = {r.id: r for r in rules}
    for finding in evaluate(Profile({SPIN: 3000, WORK: 7000}), rules):
        declared = {m.name for m in by_id[finding.rule].evidence}
        assert set(finding.evidence) == declared, finding.rule
        assert set(finding.to_dict()["evidence"]) - declared <= set(EVIDENCE_KEYS), finding.rule


def test_findings_are_ordered_by_severity_then_share(rules) -> None:
    stacks = {SPIN: 2000, ("mysqld", "start_thread", "_int_malloc"): 1200, WORK: 6800}
    findings = evaluate(Profile(stacks), rules)
    keys = [f.sort_key() for f in findings]
    assert keys == sorted(keys) and findings[0].rule == "innodb-spin-wait"


def test_few_samples_cap_severity_and_say_so(rules) -> None:
    findings = evaluate(Profile({SPIN: 30, WORK: 70}), rules)
    spin = next(f for f in findings if f.rule == "innodb-spin-wait")
    assert spin.severity == "info" and any("only 100 samples" in m for m in spin.missing)


def test_missing_facts_are_named(rules) -> None:
    spin = next(f for f in evaluate(Profile({SPIN: 3000, WORK: 7000}), rules) if f.rule == "innodb-spin-wait")
    text = " ".join(spin.missing)
    assert "no mysql.json" in text and "PAUSE latency not measured" in text
    assert "≈3,000 cycles at 10 cycles/PAUSE" in spin.message  # 6 x 50 PAUSEs without a measurement
    # server not known: every variant, each step saying which servers its variant is for
    assert {"MySQL before 8.0.16", "MariaDB 10.5.5+", "MySQL"} <= {s.applies_to for s in spin.fix}


def test_spin_cost_mysql_80_multiplier(rules) -> None:
    mysql = {
        "reachable": True,
        "server": {"family": "mysql", "version_tuple": [8, 0, 36]},
        "variables": {"innodb_spin_wait_delay": "6", "innodb_spin_wait_pause_multiplier": "50"},
    }
    run = {"host": {"pause": {"cycles": 100.0, "tsc_hz": 2.0e9}}}
    spin = next(
        f
        for f in evaluate(make_profile({SPIN: 3000, WORK: 7000}, run, None, mysql), rules)
        if f.rule == "innodb-spin-wait"
    )
    cost = spin.evidence["cost"]
    assert cost.max_cycles == 6 * 50 * 100 and cost.max_us == 15.0
    assert cost.recommended_multiplier == 5
    assert "SET PERSIST innodb_spin_wait_pause_multiplier = 5;" in [s.text for s in spin.fix if s.kind == "sql"]
    assert not [s for s in spin.fix if "MariaDB" in s.applies_to or "before 8.0.16" in s.applies_to]


def test_unknown_server_family_from_label_and_ranges() -> None:
    assert parse_version("10.11.6-MariaDB-0+deb12u1") == (10, 11, 6)
    assert in_range((8, 0, 36), ">=8.0.16, <8.4") and not in_range((5, 7, 17), ">=8.0")
    assert in_range((), "<5.0") and in_range((8, 0, 36), "==8.0")


def test_counter_names_and_aliases() -> None:
    counters = from_json(
        Counters,
        {
            "events": [
                {"event": "cpu/cycles/", "value": 7},
                {"event": "inst_retired.any", "value": 3},
                {"event": "LLC-load-misses", "value": None, "supported": False, "status": "<not supported>"},
            ]
        },
    )
    assert counters.value("cycles") == 7 and counters.value("instructions") == 3
    assert counters.value("LLC-load-misses") is None and counters.value("branches") is None


def test_docs_rules_md_is_up_to_date(rules) -> None:
    doc = (RULES_DIR.parent / "docs" / "rules.md").read_text(encoding="utf-8")
    assert doc == rules_markdown(rules), "regenerate: pmuprof rules doc > docs/rules.md"


def test_cli_rules_commands(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PMUPROF_RULES", str(RULES_DIR))
    runner = CliRunner()
    listed = runner.invoke(cli, ["rules", "list"])
    assert listed.exit_code == 0 and "innodb-spin-wait" in listed.output and "critical" in listed.output
    shown = runner.invoke(cli, ["rules", "show", "fil-space-get-index-dive"])
    assert shown.exit_code == 0 and "**Symptom.**" in shown.output and "FORCE INDEX" in shown.output
    (tmp_path / "bad.yaml").write_text("id: bad\ntitle: t\nseverity: loud\n", encoding="utf-8")
    checked = runner.invoke(cli, ["rules", "check", str(tmp_path)], standalone_mode=False)
    assert "bad.yaml:" in checked.output and checked.exception is not None and checked.exception.exit_code == 7

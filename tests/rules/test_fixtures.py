"""Every rule against its fixtures: ``fire-*`` must fire it, ``quiet-*`` must not (pytest -k RULE-ID)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pmuprof.findings.engine import evaluate
from pmuprof.findings.model import SEVERITY_ORDER

from .conftest import FIXTURES, RULES_DIR, load_fixture

CASES = sorted(FIXTURES.glob("*/*.folded"))


def _ids(items: str) -> list[str]:
    return [i.strip() for i in items.split(",") if i.strip()]


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}-{p.stem}" for p in CASES])
def test_fixture(path: Path, rules) -> None:
    profile, headers = load_fixture(path)
    findings = evaluate(profile, rules)
    by_rule = {f.rule: f for f in findings}
    rule_id, kind = path.parent.name, path.stem.split("-")[0]
    summary = [(f.rule, f.severity, round(f.share, 3)) for f in findings]
    if kind == "fire":
        assert rule_id in by_rule, f"{rule_id} did not fire; got {summary}"
        mine = by_rule[rule_id]
        if "severity" in headers:
            assert mine.severity == headers["severity"], f"{mine.severity} != {headers['severity']}: {mine.message}"
        for frame in _ids(headers.get("chain", "")):
            assert frame in mine.chain, f"{frame} not in chain {mine.chain}"
        if "message-contains" in headers:
            assert headers["message-contains"] in mine.message, mine.message
        if "fix-contains" in headers:
            assert headers["fix-contains"] in mine.fix_text(), mine.fix_text()
        if "fix-starts" in headers:  # the lead fix: its first step, the one a DBA reads first
            assert mine.fix and mine.fix[0].text.startswith(headers["fix-starts"]), mine.fix_text()
        assert mine.message and "{" not in mine.message, mine.message
    elif kind == "quiet":
        assert rule_id not in by_rule, f"{rule_id} fired on a quiet fixture: {by_rule.get(rule_id)}"
    for other in _ids(headers.get("also-fires", "")):
        assert other in by_rule, f"{other} should also fire; got {summary}"
    for other in _ids(headers.get("not-fires", "")):
        assert other not in by_rule, f"{other} must not fire; got {summary}"
    if "top" in headers:  # the verdict: the first finding no other finding explains
        verdict = next((f.rule for f in findings if not f.explained_by), None)
        assert verdict == headers["top"], f"top should be {headers['top']}; got {verdict} of {summary}"
    if "max-severity" in headers:
        limit = SEVERITY_ORDER[headers["max-severity"]]
        loud = [s for s in summary if SEVERITY_ORDER[s[1]] < limit]
        assert not loud, f"findings above {headers['max-severity']}: {loud}"


HEALTHY = sorted((FIXTURES / "healthy").glob("*.folded"))


def test_every_rule_has_fire_and_quiet_fixtures(rules) -> None:
    """The meta-test: a rule without a fixture that fires it and one that keeps it quiet fails.

    The real profiles of healthy servers (fixtures/healthy/) are every rule's quiet fixture when the
    rule does not fire on them at all; a rule that fires there (even at info) needs its own quiet-*.
    """
    quiet_on_healthy = set(r.id for r in rules)
    for path in HEALTHY:
        quiet_on_healthy -= {f.rule for f in evaluate(load_fixture(path)[0], rules)}
    lacking = []
    for rule in rules:
        names = [p.stem for p in (FIXTURES / rule.id).glob("*.folded")]
        if not any(n.startswith("fire-") for n in names):
            lacking.append(f"{rule.id}: no fire-*.folded")
        if not any(n.startswith("quiet-") for n in names) and rule.id not in quiet_on_healthy:
            lacking.append(f"{rule.id}: no quiet-*.folded, and it fires on a healthy real profile")
    names = {p.stem for p in HEALTHY}
    assert {"mariadb102-point-select", "mariadb1011-point-select", "mariadb114-point-select"} <= names, (
        "real profiles of healthy servers (MariaDB 10.2.11, 10.11 and 11.4.5) in fixtures/healthy"
    )
    assert not lacking, "\n".join(lacking)


def test_every_rule_says_what_decides_it(rules) -> None:
    """Each rule names the server facts that confirm or refute it, or says what decides it without them (issue 31:
    no finding says "corroboration: none defined")."""
    silent = [r.id for r in rules if not (r.confirm or r.refute or r.decided_by)]
    assert not silent, f"rules without confirm / refute / decided_by: {silent}"


def test_fixture_dirs_name_real_rules(rules) -> None:
    known = {r.id for r in rules} | {"demo", "healthy"}
    stray = [d.name for d in FIXTURES.iterdir() if d.is_dir() and d.name not in known]
    assert not stray, f"fixture folders without a rule: {stray}"
    assert RULES_DIR.is_dir()

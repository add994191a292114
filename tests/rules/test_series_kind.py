"""The ``series`` matcher kind: a rule reads any per-second series of the capture by name (series.json),
whatever source kept it, over the seconds it measured; without it the rule says what is missing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pmuprof.errors import RuleError
from pmuprof.findings.docs import rule_markdown
from pmuprof.findings.engine import evaluate
from pmuprof.findings.facts import facts_for
from pmuprof.findings.kinds import KINDS, Env
from pmuprof.findings.kinds.base import Matcher
from pmuprof.findings.loader import load_rule
from pmuprof.model.profile import Profile
from pmuprof.model.series import Series, SeriesSet

from .conftest import load_fixture

RULE = """\
id: queue-grows
title: The run queue grows
severity: warning
evidence:
  queue:
    series: host.runnable
fire:
  all: [{evidence: queue.growth, min: 4}]
thresholds: {metric: queue, warning: 2}
message: "{queue.summary}; from {queue.first} to {queue.last}"
doc: {symptom: s, why: w, fix: f, caveats: c}
"""
STACKS = {("mysqld", "do_command", "a"): 900}


def _profile(values: tuple[float | None, ...]) -> Profile:
    series = Series("host.runnable", "host", "tasks", "runnable tasks", True, 100, values)
    return Profile(STACKS, series=SeriesSet(series=(series,)))


@pytest.fixture()
def rule(tmp_path: Path):
    path = tmp_path / "queue-grows.yaml"
    path.write_text(RULE, encoding="utf-8")
    return load_rule(path)


def test_a_rule_reads_a_series_over_the_seconds_it_measured(rule):
    (finding,) = evaluate(_profile((2.0, None, 4.0, 9.0)), [rule])  # a second not measured is no value
    evidence = finding.to_dict()["evidence"]["queue"]
    assert (evidence["value"], evidence["min"], evidence["max"], evidence["growth"], evidence["seconds"]) == (
        5.0,
        2.0,
        9.0,
        7.0,
        3,
    )
    assert finding.message == "5 tasks on average over 3 s (lowest 2 tasks, highest 9 tasks); from 2 to 9"
    assert "- **queue**: per-second series `host.runnable`" in rule_markdown(rule)
    assert evaluate(_profile((6.0, 6.0, 7.0)), [rule]) == []  # high, but not growing: the condition holds it


def _missing(profile: Profile) -> list[str]:
    missing: list[str] = []
    value = KINDS["series"].evaluate(
        Matcher("queue", "series", "host.runnable"), Env(None, facts_for(profile, "mysqld"), None, missing)
    )  # type: ignore[arg-type]
    assert value is None
    return missing


def test_without_the_series_the_rule_says_what_is_missing(rule):
    assert evaluate(Profile(STACKS), [rule]) == []
    assert _missing(Profile(STACKS)) == ["no per-second series (series.json: a pmuprof capture keeps them)"]
    other = Profile(STACKS, series=SeriesSet(series=(Series("host.busy", "host", "share"),)))
    assert _missing(other) == ["series host.runnable not measured in this capture"]
    assert _missing(_profile((None, None))) == ["series host.runnable not measured in this capture"]


def test_a_series_name_is_source_dot_measure(rule, tmp_path: Path):
    path = tmp_path / "queue-grows.yaml"
    path.write_text(RULE.replace("series: host.runnable", "series: runnable"), encoding="utf-8")
    with pytest.raises(RuleError, match="queue-grows.yaml:6: series 'runnable' is not a series name"):
        load_rule(path)


def test_a_rules_fixture_carries_its_series(rule, tmp_path: Path):
    """A rule that reads a series gets fire and quiet fixtures like any other: NAME.json's ``series``."""
    (tmp_path / "fire.folded").write_text("mysqld;do_command;a 900\n")
    series = {"series": [{"name": "host.runnable", "unit": "tasks", "first": 100, "values": [1, 2, None, 8]}]}
    (tmp_path / "fire.json").write_text(json.dumps({"series": series}))
    profile, _ = load_fixture(tmp_path / "fire.folded")
    (finding,) = evaluate(profile, [rule])
    assert finding.to_dict()["evidence"]["queue"]["growth"] == 7.0

"""Rule-file validation: every problem is a RuleError naming file:line; templates cannot run code."""

from __future__ import annotations

from pathlib import Path

import pytest

from pmuprof.errors import RuleError
from pmuprof.findings.loader import check_rules, load_rule, load_rules
from pmuprof.findings.schema import RESERVED_NAMES
from pmuprof.findings.stackshare import StackShare
from pmuprof.findings.template import check_template, render

GOOD = """\
id: my-rule
title: A rule
severity: warning
evidence:
  spin:
    stack:
      self: ["ut_delay"]
thresholds: {metric: spin, warning: 0.05}
message: "{chain}: {spin:pct}"
doc: {symptom: s, why: w, fix: f, caveats: c}
"""


def _write(tmp_path: Path, text: str, name: str = "my-rule") -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_good_rule_loads(tmp_path: Path) -> None:
    rule = load_rule(_write(tmp_path, GOOD))
    assert rule.id == "my-rule" and rule.thresholds.warning == 0.05


@pytest.mark.parametrize(
    "old, new, line, words",
    [
        ("severity: warning\n", "severity: warning\nseverty: info\n", 4, "unknown key 'severty'"),
        ("      self:", "      selff:", 7, "unknown key 'selff'"),
        ('["ut_delay"]', '["re:ut_delay("]', 7, "bad regex"),
        ('["ut_delay"]', '["@nonsense"]', 7, "unknown alias"),
        ("metric: spin", "metric: spni", 8, "unknown evidence 'spni'"),
        ("{spin:pct}", "{spin.__class__!r}", 9, "conversions"),
        ("{spin:pct}", "{nothere}", 9, "unknown evidence"),
        ("{spin:pct}", "{spin:99999999}", 9, "not allowed"),
        ("severity: warning", "severity: urgent", 3, "severity must be"),
        ("id: my-rule", "id: other-rule", 1, "does not match the file name"),
        ("caveats: c}", "cav: c}", 10, "unknown key 'cav'"),
        ("thresholds: {metric: spin, warning: 0.05}\n", "", 1, "needs 'thresholds' or 'fire'"),
        ("      self:", "      inclusive: [x]\n      self:", 6, "exactly one of"),
    ],
)
def test_bad_rule_names_file_and_line(tmp_path: Path, old: str, new: str, line: int, words: str) -> None:
    assert old in GOOD
    path = _write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(RuleError) as err:
        load_rule(path)
    assert f"{path}:{line}:" in str(err.value)
    assert words in str(err.value)


@pytest.mark.parametrize("name", RESERVED_NAMES)
def test_evidence_named_like_what_the_engine_sets_is_refused(tmp_path: Path, name: str) -> None:
    """The engine sets these beside the evidence (templates, findings.json): a namesake would be overwritten."""
    text = GOOD.replace("  spin:\n", f"  {name}:\n").replace("metric: spin", f"metric: {name}")
    path = _write(tmp_path, text.replace("{spin:pct}", f"{{{name}}}"))
    with pytest.raises(RuleError) as err:
        load_rule(path)
    assert f"{path}:5: evidence name '{name}' is reserved" in str(err.value)


def test_yaml_syntax_error_and_duplicate_key(tmp_path: Path) -> None:
    with pytest.raises(RuleError, match=r"my-rule.yaml:\d+: YAML error"):
        load_rule(_write(tmp_path, GOOD + "  bad: [unclosed\n"))
    with pytest.raises(RuleError, match=r"my-rule.yaml:3: duplicate key 'title'"):
        load_rule(_write(tmp_path, GOOD.replace("severity: warning", "title: again")))


def test_check_collects_every_bad_file(tmp_path: Path) -> None:
    _write(tmp_path, GOOD)
    _write(tmp_path, GOOD.replace("id: my-rule", "id: two").replace("severity: warning", "severity: x"), "two")
    _write(tmp_path, "just: [a, list", "three")
    good, bad = check_rules(tmp_path)
    assert [r.id for r in good] == ["my-rule"]
    assert len(bad) == 2 and all(".yaml:" in str(e) for e in bad)


def test_empty_or_missing_rules_dir(tmp_path: Path) -> None:
    with pytest.raises(RuleError, match="no rule files"):
        load_rules(tmp_path)
    with pytest.raises(RuleError, match="no such rules directory"):
        load_rules(tmp_path / "nope")


SPIN = StackShare(value=0.28, share=0.28, count=280, hot="ut_delay")


def test_template_is_lookup_only() -> None:
    values = {"spin": SPIN, "name": "<b>&"}
    assert render("{spin:pct} {spin.hot} {name}", values) == "28.0% ut_delay <b>&"
    assert check_template("{spin[0]}", {"spin"})
    assert check_template("{{literal}} {spin}", {"spin"}) == ""
    assert "" == render("{spin.value.__class__}", values)


@pytest.mark.parametrize(
    "template,expected",
    [
        ("Spin is {spin:pct} here (delay = {missing.thing}). Next.", "Spin is 28.0% here. Next."),
        ("Waits grew ({missing}/s): threads wait.", "Waits grew: threads wait."),
        ("X ({spin:pct} of it; timeout = {missing} s). Y", "X (28.0% of it). Y"),
        ("A {spin.hot}; B = {missing}; C.", "A ut_delay; C."),
        ("A {spin.hot}; B = {missing}.", "A ut_delay."),
        ("{empty} — threads poll. Delay {missing}.", "Threads poll."),
        ("SET GLOBAL a = {missing};\n# keep\nSET GLOBAL b = {spin:pct};\n", "# keep\nSET GLOBAL b = 28.0%;\n"),
        ("Only {missing}.", ""),
    ],
)
def test_an_unknown_value_leaves_out_the_part_that_needs_it(template: str, expected: str) -> None:
    """Never a stand-in like 'n/a': the clause in parentheses, the clause, the sentence or the code line goes."""
    values = {"spin": SPIN, "empty": ""}
    assert render(template, values) == expected

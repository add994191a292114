"""The matcher-kind registry: a kind defined in one module and listed in KINDS is validated by the
schema, evaluated by the engine, worded in the report and documented, with no other file changed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pmuprof.errors import RuleError
from pmuprof.findings import kinds
from pmuprof.findings.docs import WRITING_RULES, rule_markdown
from pmuprof.findings.engine import evaluate
from pmuprof.findings.evidence import Evidence
from pmuprof.findings.kinds.base import Env, Kind, SpecCtx
from pmuprof.findings.loader import load_rule
from pmuprof.findings.model import Declared
from pmuprof.model.profile import Profile
from pmuprof.report.evidence import about, evidence_rows, value_text

RULE = """\
id: many-frames
title: Many distinct leaf frames
severity: warning
evidence:
  leaves:
    distinct_leaves: 2
thresholds: {metric: leaves, warning: 2}
message: "{leaves} leaves ({leaves.min} wanted)"
doc: {symptom: s, why: w, fix: f, caveats: c}
"""


@dataclass(frozen=True, eq=False)
class Leaves(Evidence):
    value: int
    wanted: int

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "min": self.wanted}


class DistinctLeaves(Kind[Leaves]):
    """What a new kind's module holds: its spec check, its value, its words and its doc line."""

    name = "distinct_leaves"
    guide = "`distinct_leaves` (a test kind)"
    about = "distinct leaf frames, at least {}"

    def validate(self, ctx: SpecCtx, spec: Any, line: int) -> Any:
        if not isinstance(spec, int) or spec < 1:
            raise ctx.fail(line, "distinct_leaves is a positive count")
        return spec

    def evaluate(self, matcher: Any, env: Env) -> Any:
        return Leaves(len({stack[-1] for stack in env.index.st.keys()}), matcher.spec)

    def doc(self, spec: Any) -> str:
        return f"distinct leaf frames (at least {spec})"

    def subject(self, spec: Any) -> str:
        return str(spec)

    def words(self, item: Declared, value: Leaves) -> str:
        return f"{value.value} leaf frames"


@pytest.fixture()
def registered(monkeypatch: pytest.MonkeyPatch) -> Kind:
    kind = DistinctLeaves()
    monkeypatch.setitem(kinds.KINDS, kind.name, kind)
    return kind


def test_a_new_kind_is_validated_evaluated_worded_and_documented(registered: Kind, tmp_path: Path) -> None:
    path = tmp_path / "many-frames.yaml"
    path.write_text(RULE, encoding="utf-8")
    rule = load_rule(path)
    assert rule.evidence[0].kind == "distinct_leaves" and rule.evidence[0].spec == 2
    assert "- **leaves**: distinct leaf frames (at least 2)" in rule_markdown(rule)
    assert "`distinct_leaves`" not in WRITING_RULES and "`distinct_leaves` (a test kind)" in kinds.guide()

    stacks = {("mysqld", "do_command", "a"): 300, ("mysqld", "do_command", "b"): 300, ("mysqld", "c"): 300}
    (finding,) = evaluate(Profile(stacks), [rule])
    assert finding.severity == "warning" and finding.message == "3 leaves (2 wanted)"
    assert finding.to_dict()["evidence"]["leaves"] == {"value": 3, "min": 2}
    assert evidence_rows(finding)[0]["text"] == "3 leaf frames"

    item = Declared("leaves", "distinct_leaves", "2")
    assert about(item) == "distinct leaf frames, at least 2"
    assert value_text(item, Leaves(3, 2)) == "3 leaf frames"

    path.write_text(RULE.replace("distinct_leaves: 2", "distinct_leaves: 0"), encoding="utf-8")
    with pytest.raises(RuleError, match="many-frames.yaml:6: distinct_leaves is a positive count"):
        load_rule(path)


OF_RULE = """\
id: part-of
title: A part of other samples
severity: warning
evidence:
  walk:
    stack:
      inclusive: ["walk"]
      of: ["dive*"]
fire:
  all: [{evidence: walk.of_share, min: 0.25}]
thresholds: {metric: walk, warning: 0.05}
message: "{walk.of_share:pct} of the dives walk"
doc: {symptom: s, why: w, fix: f, caveats: c}
"""


def test_stack_of_divides_by_the_samples_holding_an_of_frame(tmp_path: Path) -> None:
    path = tmp_path / "part-of.yaml"
    path.write_text(OF_RULE, encoding="utf-8")
    rule = load_rule(path)
    stacks = {("mysqld", "dive", "walk"): 100, ("mysqld", "dive_low", "x"): 300, ("mysqld", "other"): 600}
    (finding,) = evaluate(Profile(stacks), [rule])
    assert finding.message == "25.0% of the dives walk" and finding.share == pytest.approx(0.1)
    assert finding.to_dict()["evidence"]["walk"]["of_share"] == pytest.approx(0.25)
    assert "of: `dive*`" in rule_markdown(rule)
    stacks[("mysqld", "dive_low", "x")] = 400  # 100 of 500 dive samples: under the condition
    assert evaluate(Profile(stacks), [rule]) == []
    path.write_text(OF_RULE.replace('of: ["dive*"]', "of: []"), encoding="utf-8")
    with pytest.raises(RuleError, match="part-of.yaml:8: stack.of needs at least one frame pattern"):
        load_rule(path)

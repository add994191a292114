"""How severe and how sure: conditions on evidence, the threshold that set the level, and confidence.

The headline share of a finding is the value of the metric that set its severity. A finding resting
on a stack share stays info below 1 % of the samples; a rule may cap what it says without a
corroborating fact (waiters in the processlist, SEMAPHORES, status counters).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any
from collections.abc import Mapping

from .evidence import Evidence, Fact
from .facts import number
from .kinds import kind_of
from .model import Confidence
from .schema import SEVERITIES, Condition, Rule
from .template import lookup, render, scalar

MIN_STACK_SHARE = 0.01  # below this a stack-share finding is information, never a warning


@dataclass(frozen=True)
class Grade:
    level: int  # index into SEVERITIES
    metric: str | None  # the evidence whose value set the level (None: a fixed-severity rule)
    value: float | None
    bound: float | None  # the threshold that value passed


def holds(cond: Condition, values: Mapping[str, Any]) -> bool:
    """A condition on evidence; unknown evidence never holds."""
    raw = lookup(values, cond.evidence)
    if cond.op == "present":
        return (scalar(raw) is not None) == bool(cond.value)
    value = scalar(raw)
    if value is None:
        return False
    if cond.op in ("equals", "not_equals", "in"):
        wanted = cond.value if cond.op == "in" else (cond.value,)
        same = any(_same(value, w) for w in wanted)
        return not same if cond.op == "not_equals" else same
    num = raw.number if isinstance(raw, Fact) else number(value)  # a looked-up fact carries its number
    limit = number(cond.value)
    if num is None or limit is None:
        return False
    return {"min": num >= limit, "max": num <= limit, "above": num > limit, "below": num < limit}[cond.op]


def _same(value: Any, wanted: Any) -> bool:
    a, b = number(value), number(wanted)
    if a is not None and b is not None and not isinstance(value, str) and not isinstance(wanted, str):
        return a == b
    if isinstance(value, bool) or isinstance(wanted, bool):
        return a == b
    return str(value).strip().lower() == str(wanted).strip().lower()


def grade(rule: Rule, values: Mapping[str, Any]) -> Grade | None:
    """The level the thresholds give (the metric and bound that gave it), or the rule's fixed severity.

    Each metric is held to its levels (off-CPU time to ``thresholds.offcpu`` when the rule has them); the
    gravest level wins, and of two metrics at that level the one furthest past its bound."""
    th = rule.thresholds
    if th is None:
        return Grade(SEVERITIES.index(rule.severity), None, None, None)
    candidates = [(m, number(scalar(values.get(m)))) for m in th.metrics]
    present = [(m, v) for m, v in candidates if v is not None]
    if not present:
        return None
    if not th.offcpu:  # one scale: the largest value (the smallest with below) decides
        present = [(min if th.below else max)(present, key=lambda mv: mv[1])]
    graded = [g for g in (_level(m, v, th.bounds(is_offcpu_metric(rule, m)), th.below) for m, v in present) if g]
    return max(graded, key=lambda g: (g.level, _margin(g, th.below))) if graded else None


def _level(metric: str, value: float, bounds: Mapping[str, float | None], below: bool) -> Grade | None:
    for level in ("critical", "warning", "info"):
        bound = bounds[level]
        if bound is not None and (value <= bound if below else value >= bound):
            return Grade(SEVERITIES.index(level), metric, value, bound)
    return None


def _margin(g: Grade, below: bool) -> float:
    if not g.bound or g.value is None:
        return 0.0
    return g.bound / g.value if below and g.value else g.value / g.bound


def is_offcpu_metric(rule: Rule, metric: str | None) -> bool:
    """Whether the evidence is off-CPU time (an ``offcpu`` matcher or an off-CPU derived fact)."""
    m = rule.matcher(metric) if metric else None
    return m is not None and kind_of(m.kind).offcpu(m.spec)


def is_stack_metric(rule: Rule, metric: str | None) -> bool:
    matcher = rule.matcher(metric) if metric else None
    kind = kind_of(matcher.kind) if matcher is not None else None
    return kind is not None and kind.share  # a share of the samples (stack, latch, fence)


def corroboration(rule: Rule, values: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(what confirmed the evidence, what was looked for and not seen) as the rule words them."""
    seen: list[str] = []
    not_seen: list[str] = []
    for item in rule.corroborate:
        text = render(item.text, values).strip()
        (seen if all(holds(c, values) for c in item.conditions) else not_seen).append(text)
    return seen, not_seen


def confidence(rule: Rule, g: Grade, values: Mapping[str, Any], seen: list[str], not_seen: list[str]) -> Confidence:
    """Samples behind the headline, its margin over the threshold, and the corroborating facts."""
    ev = values.get(g.metric) if g.metric else None
    samples = ev.counted() if isinstance(ev, Evidence) else None
    margin = round(g.value / g.bound, 2) if g.value is not None and g.bound else None
    strong = (margin is None or margin >= 2) and (samples is None or samples >= 100)
    level = "high" if strong and (seen or not rule.corroborate) else "medium" if strong or seen else "low"
    out = Confidence(samples, values.get("samples"), g.bound, margin, tuple(seen), tuple(not_seen), level)
    return replace(out, value=round(g.value, 4) if g.value is not None else None)

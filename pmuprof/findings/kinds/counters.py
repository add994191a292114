"""The ``counter`` and ``counter_ratio`` kinds: PMU counts of counters.json and a ratio of two."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...model.counters import ratio
from ..evidence import Evidence, Fact, number
from .base import Env, Kind, Matcher, SpecCtx, fact


@dataclass(frozen=True, eq=False)
class Ratio(Evidence):
    """A ratio of two counters, with both counts under the counters' names."""

    value: float
    numerator: str
    num: float
    denominator: str
    den: float

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, self.numerator: self.num, self.denominator: self.den}

    def words(self, share: bool) -> str:
        """'0.85 (instructions 1,234 / cycles 1,456)': the counts only when they are two counters."""
        text = f"{self.value:.2f}"
        if self.numerator == self.denominator:
            return text
        return text + f" ({self.numerator} {number(self.num)} / {self.denominator} {number(self.den)})"


class Counter(Kind[Fact]):
    name = "counter"
    guide = "`counter`"
    about = "counter {}"

    def evaluate(self, matcher: Matcher, env: Env) -> Fact | None:
        value = env.facts.counter(matcher.spec)
        if value is None:
            env.missing.append(f"counter {matcher.spec} not in counters.json")
        return fact(value)


class CounterRatio(Kind[Ratio]):
    name = "counter_ratio"
    guide = "`counter_ratio: [instructions, cycles]`"
    about = "{}"

    def validate(self, ctx: SpecCtx, spec: Any, line: int) -> Any:
        pair = ctx.strings(spec, line, "counter_ratio")
        if len(pair) != 2:
            raise ctx.fail(line, "counter_ratio is [numerator, denominator]")
        return pair

    def evaluate(self, matcher: Matcher, env: Env) -> Ratio | None:
        pair, facts = matcher.spec, env.facts
        num, den = facts.counter(pair[0]), facts.counter(pair[1])
        value = ratio(num, den)
        if value is None or num is None or den is None:
            pmu = facts.run.host.hardware_pmu
            why = "no hardware PMU on this host" if pmu is False else "not in counters.json"
            env.missing.append(f"{pair[0]}/{pair[1]} unavailable ({why})")
            return None
        return Ratio(value, pair[0], num, pair[1], den)

    def doc(self, spec: Any) -> str:
        return f"counter ratio `{spec[0]}` / `{spec[1]}`"

    def subject(self, spec: Any) -> str:
        return " / ".join(spec)

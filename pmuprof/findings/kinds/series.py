"""The ``series`` kind: one of the capture's per-second series (series.json) by name, over the window.

Any source's series reads the same way (``host.busy``, ``processlist.active``, ``watch.Threads_running``,
...): its mean is the value a threshold grades, and its lowest, highest, first and last values and its
growth (last − first) are there for conditions (``evidence: busy.max``). Series are the host's or the
server's, not one process's: every process of a capture reads the same values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ...model.series import SHARE
from ..evidence import Summarized, number, pct
from .base import Env, Kind, Matcher, SpecCtx

NAME = re.compile(r"^[A-Za-z0-9_]+\.\S+$")


@dataclass(frozen=True, eq=False)
class SeriesWindow(Summarized):
    """A per-second series over the capture: ``value`` is its mean over the seconds it measured."""

    value: float
    mean: float
    min: float
    max: float
    first: float
    last: float
    growth: float  # last − first
    seconds: int  # seconds measured
    unit: str
    summary: str


def amount(value: float, unit: str) -> str:
    """A series value with its unit: shares as %, others as numbers ('3.5 tasks', '1,200 /s')."""
    if unit == SHARE:
        return pct(value)
    return f"{number(value)} {unit}".rstrip()


class Series(Kind[SeriesWindow]):
    name = "series"
    guide = "`series` (a per-second series by name: `host.busy`, `processlist.active`, ...)"
    about = "per-second {}"

    def validate(self, ctx: SpecCtx, spec: Any, line: int) -> Any:
        text = ctx.text(spec, line, self.name)
        if not NAME.match(text):
            raise ctx.fail(line, f"series '{text}' is not a series name", "SOURCE.MEASURE, e.g. host.busy")
        return text

    def evaluate(self, matcher: Matcher, env: Env) -> SeriesWindow | None:
        table = env.facts.series
        found = table.get(matcher.spec) if table is not None else None
        if table is None:
            env.missing.append("no per-second series (series.json: a pmuprof capture keeps them)")
            return None
        values = [v for _, v in found.points()] if found is not None else []
        if not values:
            env.missing.append(f"series {matcher.spec} not measured in this capture")
            return None
        mean = sum(values) / len(values)
        unit = found.unit if found is not None else ""
        summary = (
            f"{amount(mean, unit)} on average over {len(values)} s "
            f"(lowest {amount(min(values), unit)}, highest {amount(max(values), unit)})"
        )
        return SeriesWindow(
            mean,
            mean,
            min(values),
            max(values),
            values[0],
            values[-1],
            values[-1] - values[0],
            len(values),
            unit,
            summary,
        )

    def doc(self, spec: Any) -> str:
        return f"per-second series `{spec}`"

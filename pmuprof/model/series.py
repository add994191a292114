"""series.json: what the capture's sources measured once a second, keyed on the capture's monotonic second.

Every per-second source (host load, the processlist, watch's trigger polls, ...) keeps its values as
``Series``: one value per whole second of CLOCK_MONOTONIC from its first, the clock perf record samples with here
(tools/perf/argv.SAMPLE_CLOCK), so a series' second is the seconds strip's second and the sample
table's (model/samples.py). A value is what the source read in that second (a level such as runnable
tasks) or the rate over the interval ending there (per second); None is a second the source did not
measure. The report's strip draws the series marked ``show``; rules read any of them by name
(findings/kinds/series.py). Written once by the capture (capture/sources), read by every report.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from collections.abc import Iterator

SERIES_FORMAT = 1
CLOCK = "CLOCK_MONOTONIC"
SHARE = "share"  # the unit of a fraction (0..1): the report shows it as a percentage


@dataclass(frozen=True)
class Series:
    """One measure of one source: ``values[i]`` is second ``first + i`` of the clock (None: not measured)."""

    name: str  # "<source>.<measure>", e.g. "host.runnable": what rules and the strip call it
    source: str = ""  # the capture source that measured it (run.json ``sources``)
    unit: str = ""  # what a value counts: "tasks", "connections", "/s", "bytes/s", or SHARE
    about: str = ""  # one line: what it measures (the strip's legend, a rule's words)
    show: bool = False  # drawn under the report's seconds strip (the others are for rules)
    first: int = 0  # the first second of CLOCK_MONOTONIC it covers
    values: tuple[float | None, ...] = ()

    def __post_init__(self) -> None:
        if self.first < 0:
            raise TypeError(f"series {self.name}: first must be a second of the clock, not {self.first}")
        if any(v is not None and not math.isfinite(v) for v in self.values):
            raise TypeError(f"series {self.name}: a value is not a finite number")

    @classmethod
    def of(
        cls, name: str, source: str, unit: str, about: str, show: bool, by_second: dict[int, float | None]
    ) -> Series:
        """A series from its values by second (seconds it lacks between the first and the last are None)."""
        if not by_second:
            return cls(name, source, unit, about, show)
        first, last = min(by_second), max(by_second)
        return cls(name, source, unit, about, show, first, tuple(by_second.get(s) for s in range(first, last + 1)))

    def points(self) -> Iterator[tuple[int, float]]:
        """(second, value) of every measured second, in order."""
        return ((self.first + i, v) for i, v in enumerate(self.values) if v is not None)

    def within(self, first: int, last: int) -> Series:
        """The same series keeping seconds ``first`` .. ``last`` (both included)."""
        lo = max(first, self.first)
        kept = self.values[lo - self.first : max(0, last - self.first + 1)]
        return replace(self, first=lo if kept else 0, values=kept)

    def aligned(self, first: int, width: int) -> list[float | None]:
        """Its values at seconds ``first`` .. ``first + width - 1`` (None where it has none)."""
        out: list[float | None] = [None] * width
        for second, value in self.points():
            if 0 <= second - first < width:
                out[second - first] = value
        return out


@dataclass(frozen=True)
class SeriesSet:
    """series.json: every series of one capture, each name once."""

    format: int = SERIES_FORMAT
    clock: str = CLOCK
    series: tuple[Series, ...] = ()

    def __post_init__(self) -> None:
        names = [s.name for s in self.series]
        if len(set(names)) != len(names):
            raise TypeError(f"series named twice: {sorted({n for n in names if names.count(n) > 1})}")

    def get(self, name: str) -> Series | None:
        return next((s for s in self.series if s.name == name), None)

    def shown(self) -> tuple[Series, ...]:
        """The series the seconds strip draws, in the order the sources gave them."""
        return tuple(s for s in self.series if s.show)

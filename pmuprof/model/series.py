"""series.json: what the capture's sources measured once a second, keyed on the capture's monotonic second.

Every per-second source (host load, the processlist, watch's trigger polls, ...) keeps its values as
``Series``: one value per whole second of CLOCK_MONOTONIC, the clock perf record samples with here
(tools/perf/argv.SAMPLE_CLOCK), so a series' second is the seconds strip's second and the sample
table's (model/samples.py). A value is what the source read in that second (a level such as runnable
tasks) or the rate over the interval ending there (per second); None is a second the source did not
measure. The report's strip draws the series marked ``show``; rules read any of them by name
(findings/kinds/series.py). Written once by the capture (capture/sources), read by every report.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from collections.abc import Iterator

SERIES_FORMAT = 1
CLOCK = "CLOCK_MONOTONIC"
SHARE = "share"  # the unit of a fraction (0..1): the report shows it as a percentage


@dataclass(frozen=True)
class Series:
    """One measure of one source. ``seconds`` ascend strictly; ``values`` has one entry per second."""

    name: str  # "<source>.<measure>", e.g. "host.runnable": what rules and the strip call it
    source: str = ""  # the capture source that measured it (run.json ``sources``)
    unit: str = ""  # what a value counts: "tasks", "connections", "/s", "bytes/s", or SHARE
    about: str = ""  # one line: what it measures (the strip's legend, a rule's words)
    show: bool = False  # drawn under the report's seconds strip (the others are for rules)
    seconds: tuple[int, ...] = ()
    values: tuple[float | None, ...] = ()

    def __post_init__(self) -> None:
        if len(self.seconds) != len(self.values):
            raise TypeError(f"series {self.name}: {len(self.seconds)} seconds but {len(self.values)} values")
        if any(b <= a for a, b in zip(self.seconds, self.seconds[1:])) or (self.seconds and self.seconds[0] < 0):
            raise TypeError(f"series {self.name}: seconds must ascend and be whole seconds of the clock")
        if any(v is not None and not math.isfinite(v) for v in self.values):
            raise TypeError(f"series {self.name}: a value is not a finite number")

    def points(self) -> Iterator[tuple[int, float]]:
        """(second, value) of every measured second, in order."""
        return ((s, v) for s, v in zip(self.seconds, self.values) if v is not None)

    def within(self, first: int, last: int) -> Series:
        """The same series keeping seconds ``first`` .. ``last`` (both included)."""
        keep = [i for i, s in enumerate(self.seconds) if first <= s <= last]
        return Series(
            self.name,
            self.source,
            self.unit,
            self.about,
            self.show,
            tuple(self.seconds[i] for i in keep),
            tuple(self.values[i] for i in keep),
        )

    def aligned(self, first: int, width: int) -> list[float | None]:
        """Its values at seconds ``first`` .. ``first + width - 1`` (None where it has none)."""
        out: list[float | None] = [None] * width
        for second, value in zip(self.seconds, self.values):
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

"""Click parameter types shared by every command (one duration syntax everywhere)."""

from __future__ import annotations

from typing import Any

import click

from ..errors import UsageError
from ..workflows.triggers import parse_duration

DURATION_HELP = "30, 30s, 500ms, 5m or 1h"


class Duration(click.ParamType):
    """A duration in seconds: ``30`` (seconds), ``30s``, ``500ms``, ``5m``, ``1h``; bounds inclusive."""

    name = "duration"

    def __init__(self, min_s: float | None = None, max_s: float | None = None) -> None:
        self.min_s, self.max_s = min_s, max_s

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "DURATION"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            seconds = float(value)
        else:
            try:
                seconds = parse_duration(str(value))
            except UsageError:
                self.fail(f"{value!r} is not a duration ({DURATION_HELP})", param, ctx)
        if self.min_s is not None and seconds < self.min_s:
            self.fail(f"{value!r} is shorter than {_human(self.min_s)}", param, ctx)
        if self.max_s is not None and seconds > self.max_s:
            self.fail(f"{value!r} is longer than {_human(self.max_s)}", param, ctx)
        return seconds


def _human(seconds: float) -> str:
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"

"""One line of `pmuprof doctor`: a stable id for scripts, what it checks, and the fix when it is MISS."""

from __future__ import annotations

from dataclasses import dataclass

SEVERITIES = ("error", "warning", "info")  # error: captures fail; warning: a feature is off; info: expected off


@dataclass(frozen=True)
class Check:
    id: str  # stable slug ("perf", "offcpu", "symbols", ...): the same on every host and for every pid
    name: str  # what the line is about, for people (never holds a pid either)
    ok: bool
    detail: str
    fix: str = ""
    severity: str = "warning"  # what a MISS of this line means
    pid: int | None = None  # the server this line is about (symbols, frame pointers, MySQL connection)

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity {self.severity!r} is not one of {SEVERITIES}")

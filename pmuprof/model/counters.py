"""counters.json as frozen types: perf stat values with their enabled/running times (multiplexing visible)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping

MUX_FLAG_PCT = 99.5  # below this share of enabled time the kernel multiplexed the counter
ALIASES = {
    "cycles": ("cycles", "cpu-cycles", "cpu_clk_unhalted.thread", "cpu_clk_unhalted.core",
               "cpu_clk_unhalted", "unhalted_core_cycles", "cycles_not_in_halt"),
    "instructions": ("instructions", "inst_retired.any", "inst_retired.any_p", "inst_retired",
                     "instruction_retired", "retired_instructions"),
}


def base_event(name: str) -> str:
    """'cpu/cycles/u' or 'cycles:u' -> 'cycles'; 'cpu-cycles' -> 'cycles'."""
    core = re.sub(r"^[\w-]+/([^/,=]+)/[a-zA-Z]*$", r"\1", name.strip())
    core = core.split(":", 1)[0].strip().lower()
    return "cycles" if core == "cpu-cycles" else core


@dataclass(frozen=True)
class CounterValue:
    """One counted event. ``event`` is pmuprof's name for curated PMU events, ``perf`` perf's spelling."""

    event: str
    value: float | None = None
    supported: bool = True
    perf: str = ""
    unit: str = ""
    status: str = ""  # counted | <not supported> | <not counted>
    enabled_ns: float | None = None
    running_pct: float | None = None
    process: str = ""  # per-target counts (empty: the scope below)

    @property
    def multiplexed(self) -> bool:
        return self.running_pct is not None and self.running_pct < MUX_FLAG_PCT


@dataclass(frozen=True)
class Counters:
    scope: str = ""  # system-wide (all processes) | cgroup X | target threads
    duration_s: float | None = None
    events: tuple[CounterValue, ...] = ()
    derived: Mapping[str, float] = field(default_factory=dict)

    def value(self, name: str) -> float | None:
        """Sum of the counted values of an event, by pmuprof/perf name or a generic alias (cycles, instructions)."""
        exact = [e.value for e in self.events if e.event == name and e.supported and e.value is not None]
        if exact:
            return sum(exact)
        wanted = set(ALIASES.get(name, (name,)))
        found = [e.value for e in self.events
                 if e.supported and e.value is not None and base_event(e.event) in wanted]
        return sum(found) if found else None

    @property
    def ipc(self) -> float | None:
        if "ipc" in self.derived:
            return self.derived["ipc"]
        cycles, instructions = self.value("cycles"), self.value("instructions")
        return instructions / cycles if cycles and instructions is not None else None

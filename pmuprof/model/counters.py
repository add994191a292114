"""counters.json as frozen types: perf stat values with their enabled/running times (multiplexing visible)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from collections.abc import Mapping

MUX_FLAG_PCT = 99.5  # below this share of enabled time the kernel multiplexed the counter
ALIASES = {
    "cycles": (
        "cycles",
        "cpu-cycles",
        "cpu_clk_unhalted.thread",
        "cpu_clk_unhalted.core",
        "cpu_clk_unhalted",
        "unhalted_core_cycles",
        "cycles_not_in_halt",
    ),
    "instructions": (
        "instructions",
        "inst_retired.any",
        "inst_retired.any_p",
        "inst_retired",
        "instruction_retired",
        "retired_instructions",
    ),
}


def event_name(spelling: str) -> str:
    """perf's spelling of an event without its modifiers: 'cpu-clock:ppH' -> 'cpu-clock', 'cycles:P' -> 'cycles'."""
    return spelling.split(":", 1)[0].strip()


def base_event(name: str) -> str:
    """The counter an event counts, for matching: 'cpu/cycles/u' or 'cycles:u' -> 'cycles'; 'cpu-cycles' -> 'cycles'."""
    core = re.sub(r"^[\w-]+/([^/,=]+)/[a-zA-Z]*$", r"\1", name.strip())
    core = event_name(core).lower()
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

    def value(self, name: str, process: str | None = None) -> float | None:
        """Sum of the counted values of an event, by pmuprof/perf name or a generic alias (cycles, instructions),
        of one process's counts ('': the counting scope) or, with ``process`` None, of all of them."""
        mine = [
            (e.event, v)
            for e in self.events
            if e.supported and (v := e.value) is not None and (process is None or e.process == process)
        ]
        exact = [v for event, v in mine if event == name]
        if exact:
            return sum(exact)
        wanted = set(ALIASES.get(name, (name,)))
        found = [v for event, v in mine if base_event(event) in wanted]
        return sum(found) if found else None

    def ipc(self, process: str | None = None) -> float | None:
        """Instructions per cycle counted for ``process`` (as ``value`` reads them), else, for the whole
        scope, the ipc an older counters.json stored; None when cycles or instructions are not known."""
        counted = ratio(self.value("instructions", process), self.value("cycles", process))
        return self._stored_ipc() if counted is None and process is None else counted

    def ipc_by_process(self) -> dict[str, float]:
        """IPC of each process that has both counters (key '': the counting scope), else the scope's stored
        ipc; rounded to the 3 decimals every output shows."""
        counted = {proc: self.ipc(proc) for proc in sorted({e.process for e in self.events})}
        found = {proc: round(value, 3) for proc, value in counted.items() if value is not None}
        stored = self._stored_ipc()
        return found or ({"": round(stored, 3)} if stored is not None else {})

    def _stored_ipc(self) -> float | None:
        return float(self.derived["ipc"]) if "ipc" in self.derived else None


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """numerator / denominator; None unless both are known and the denominator is not zero."""
    if numerator is None or not denominator:
        return None
    return numerator / denominator

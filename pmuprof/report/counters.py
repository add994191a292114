"""The report's counters block from counters.json: rows with multiplexing shown, IPC per process."""

from __future__ import annotations

from ..model.counters import Counters, CounterValue
from .rows import CounterRow, CountersSection


def _row(value: CounterValue) -> CounterRow:
    note = ""
    if value.value is None or not value.supported:
        note = (value.status or "not counted").strip("<>")
    elif value.running_pct is not None and value.running_pct <= 0:
        note = "never scheduled on a counter"
    return {
        "process": value.process,
        "event": value.event,
        "value": value.value if value.supported else None,
        "unit": value.unit,
        "enabled": value.enabled_ns,
        "running_pct": value.running_pct,
        "multiplexed": value.multiplexed,
        "note": note,
    }


def counter_rows(counters: Counters) -> list[CounterRow]:
    return [_row(v) for v in counters.events]


def counters_section(counters: Counters) -> CountersSection:
    """The report's counters block: rows, IPC per process, whether any counter was multiplexed."""
    rows = counter_rows(counters)
    return {
        "rows": rows,
        "scope": counters.scope,
        "ipc": counters.ipc_by_process(),
        "multiplexed": any(r["multiplexed"] for r in rows),
        "error": "",
    }

"""The report's counters block from counters.json: rows with multiplexing shown, IPC per process."""

from __future__ import annotations

from typing import Any

from ..model.counters import Counters, CounterValue, base_event


def _row(value: CounterValue) -> dict[str, Any]:
    note = ""
    if value.value is None or not value.supported:
        note = (value.status or "not counted").strip("<>")
    elif value.running_pct is not None and value.running_pct <= 0:
        note = "never scheduled on a counter"
    return {"process": value.process, "event": value.event, "value": value.value if value.supported else None,
            "unit": value.unit, "enabled": value.enabled_ns, "running_pct": value.running_pct,
            "multiplexed": value.multiplexed, "note": note}


def counter_rows(counters: Counters) -> list[dict[str, Any]]:
    """Rows {process, event, value, unit, enabled, running_pct, multiplexed, note}."""
    return [_row(v) for v in counters.events]


def derived_ipc(counters: Counters) -> dict[str, float]:
    """Instructions per cycle for each process that has both counters (key '' = the counting scope)."""
    found: dict[str, dict[str, float]] = {}
    for v in counters.events:
        base = base_event(v.event)
        if v.supported and v.value is not None and base in ("cycles", "instructions"):
            found.setdefault(v.process, {})[base] = found.get(v.process, {}).get(base, 0.0) + v.value
    ipc = {proc: round(vals["instructions"] / vals["cycles"], 3) for proc, vals in sorted(found.items())
           if vals.get("cycles") and "instructions" in vals}
    if not ipc and "ipc" in counters.derived:
        ipc = {"": round(float(counters.derived["ipc"]), 3)}
    return ipc


def counters_section(counters: Counters) -> dict[str, Any]:
    """The report's counters block: rows, IPC per process, whether any counter was multiplexed."""
    rows = counter_rows(counters)
    return {"rows": rows, "scope": counters.scope, "ipc": derived_ipc(counters),
            "multiplexed": any(r["multiplexed"] for r in rows), "error": ""}

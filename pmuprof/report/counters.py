"""Normalise counters.json (perf stat JSON, helper counts, per-target maps) into rows with multiplexing and IPC."""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

_VALUE_KEYS = ("value", "counter-value", "count", "scaled", "raw")
_ENABLED_KEYS = ("enabled", "time_enabled", "enabled_ns")
_RUNNING_KEYS = ("running", "time_running", "running_ns", "event-runtime")
_NAME_KEYS = ("event", "name")
_PROCESS_KEYS = ("process", "label", "target", "comm")
_META_KEYS = frozenset({"argv", "source", "error", "reason", "interval_s", "duration_s", "tool", "mode", "pid", "pids",
                        "scope", "derived"})
_GROUP_KEYS = ("targets", "processes", "by_target")
_LIST_KEYS = ("counters", "events", "values")
MUX_FLAG_PCT = 99.5  # below this share of enabled time the kernel multiplexed the counter


def _first(row: Mapping[str, Any], keys: Iterable[str]) -> Any:
    for key in keys:
        if key in row and row[key] is not None:
            return row[key]
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.replace(",", ""))
        except ValueError:
            return None
    return None


def base_event(name: str) -> str:
    """'cpu/cycles/u' or 'cycles:u' -> 'cycles'; 'cpu-cycles' -> 'cycles'."""
    core = re.sub(r"^[\w-]+/([^/,=]+)/[a-zA-Z]*$", r"\1", name.strip())
    core = core.split(":", 1)[0].strip().lower()
    return {"cpu-cycles": "cycles", "instructions:u": "instructions"}.get(core, core)


def _row(process: str, name: str, raw: Any) -> dict[str, Any]:
    data = raw if isinstance(raw, Mapping) else {"value": raw}
    value_raw = _first(data, _VALUE_KEYS)
    value = _number(value_raw)
    enabled = _number(_first(data, _ENABLED_KEYS))
    running = _number(_first(data, _RUNNING_KEYS))
    pct = _number(data.get("pcnt-running") if "pcnt-running" in data else data.get("running_pct"))
    if pct is None and enabled and running is not None:
        pct = 100.0 * running / enabled
    note = ""
    if value is None:
        note = str(value_raw if value_raw is not None else data.get("error") or data.get("status") or "not counted").strip("<>")
    elif pct is not None and pct <= 0:
        note = "never scheduled on a counter"
    return {
        "process": process,
        "event": name,
        "value": value,
        "unit": str(data.get("unit") or ""),
        "enabled": enabled,
        "running": running,
        "running_pct": None if pct is None else round(pct, 2),
        "multiplexed": pct is not None and pct < MUX_FLAG_PCT,
        "note": note,
    }


def _rows_from(obj: Any, process: str) -> list[dict[str, Any]]:
    if isinstance(obj, list):
        out = []
        for item in obj:
            if isinstance(item, Mapping) and _first(item, _NAME_KEYS) is not None:
                proc = str(_first(item, _PROCESS_KEYS) or process)
                out.append(_row(proc, str(_first(item, _NAME_KEYS)), item))
        return out
    if not isinstance(obj, Mapping):
        return []
    for key in _GROUP_KEYS:
        if isinstance(obj.get(key), Mapping):
            return [r for label, sub in sorted(obj[key].items()) for r in _rows_from(sub, str(label))]
    for key in _LIST_KEYS:
        if isinstance(obj.get(key), (list, Mapping)):
            return _rows_from(obj[key], process)
    out = []
    for name, raw in sorted(obj.items()):
        if name in _META_KEYS or not isinstance(raw, (Mapping, int, float, str)) or isinstance(raw, bool):
            continue
        if isinstance(raw, str) and _number(raw) is None and not raw.startswith("<"):
            continue
        out.append(_row(process, str(name), raw))
    return out


def counter_rows(counters: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """Rows {process, event, value, unit, enabled, running, running_pct, multiplexed, note}."""
    if not counters:
        return []
    return _rows_from(counters, "")


def derived_ipc(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Instructions per cycle for each process that has both counters (key '' = whole target)."""
    found: dict[str, dict[str, float]] = {}
    for row in rows:
        if row["value"] is None:
            continue
        base = base_event(row["event"])
        if base in ("cycles", "instructions"):
            found.setdefault(row["process"], {})[base] = found.get(row["process"], {}).get(base, 0.0) + row["value"]
    return {
        proc: round(vals["instructions"] / vals["cycles"], 3)
        for proc, vals in sorted(found.items())
        if vals.get("cycles") and "instructions" in vals
    }


def counters_section(counters: Mapping[str, Any] | None) -> dict[str, Any]:
    """The report's counters block: rows, IPC per process, whether any counter was multiplexed."""
    rows = counter_rows(counters)
    error = scope = ""
    ipc = derived_ipc(rows)
    if isinstance(counters, Mapping):
        error = str(counters.get("error") or counters.get("reason") or "")
        scope = str(counters.get("scope") or "")
        derived = counters.get("derived")
        if not ipc and isinstance(derived, Mapping) and isinstance(derived.get("ipc"), (int, float)):
            ipc = {"": round(float(derived["ipc"]), 3)}
    return {
        "rows": rows,
        "scope": scope,
        "ipc": ipc,
        "multiplexed": any(r["multiplexed"] for r in rows),
        "error": error,
    }

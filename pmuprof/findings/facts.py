"""Facts the rules read besides stacks: server (mysql.json), host/target (run.json), counters."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ..model.profile import Profile
from .versions import parse_version

_COUNTER_ALIASES = {
    "cycles": ("cycles", "cpu-cycles", "cpu_clk_unhalted.thread", "cpu_clk_unhalted.core",
               "cpu_clk_unhalted", "unhalted_core_cycles", "cycles_not_in_halt"),
    "instructions": ("instructions", "inst_retired.any", "inst_retired.any_p", "inst_retired",
                     "instruction_retired", "retired_instructions"),
}


def number(value: Any) -> float | None:
    """A float from an int/float/numeric string ('ON'/'OFF' → 1/0); None otherwise."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = value.strip().replace(",", "")
        if text.upper() in ("ON", "TRUE", "YES"):
            return 1.0
        if text.upper() in ("OFF", "FALSE", "NO"):
            return 0.0
        try:
            return float(text)
        except ValueError:
            return None
    return None


def dig(data: Any, dotted: str) -> Any:
    cur = data
    for part in dotted.split("."):
        if isinstance(cur, Mapping) and part in cur:
            cur = cur[part]
        elif isinstance(cur, (list, tuple)) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            return None
    return cur


def _family_from_label(label: str) -> str | None:
    low = label.lower()
    if "mariadb" in low:
        return "mariadb"
    if "mysqld" in low:
        return "mysql"
    return None


@dataclass(frozen=True)
class Facts:
    """Everything non-stack a matcher may read, for one target process."""

    process: str
    run: Mapping[str, Any]
    counters: Mapping[str, Any]
    mysql: Mapping[str, Any] | None
    target: Mapping[str, Any] = field(default_factory=dict)
    family: str | None = None
    version: tuple[int, ...] = ()
    version_text: str = ""
    server_missing: str = ""

    @property
    def variables(self) -> Mapping[str, Any]:
        return (self.mysql or {}).get("variables") or {}

    def variable(self, name: str) -> Any:
        variables = self.variables
        if name in variables:
            return variables[name]
        low = {k.lower(): v for k, v in variables.items()}
        return low.get(name.lower())

    def status(self, name: str) -> Any:
        status = (self.mysql or {}).get("status") or {}
        for part in ("rates", "after", "before"):
            section = status.get(part) or {}
            if name in section:
                return section[name]
        return None

    def counter(self, name: str) -> float | None:
        return counter_value(self.counters, name)


def _target_for(run: Mapping[str, Any], label: str) -> Mapping[str, Any]:
    targets = [t for t in (run.get("targets") or []) if isinstance(t, Mapping)]
    for t in targets:
        if label and label in (t.get("label"), t.get("comm"), str(t.get("pid", ""))):
            return t
    return targets[0] if len(targets) == 1 else {}


def facts_for(profile: Profile, process: str) -> Facts:
    """Collect server/host/target facts for one process label of the profile."""
    mysql = profile.mysql if isinstance(profile.mysql, Mapping) else None
    family, version, text, missing = None, (), "", ""
    if mysql is None:
        missing = "no mysql.json: server version and variables unknown"
    elif mysql.get("reachable") is False:
        missing = f"server not reachable ({mysql.get('error') or 'no reason given'}): version and variables unknown"
        mysql = None
    else:
        server = mysql.get("server") or {}
        family = server.get("family") or None
        text = str(server.get("version") or "")
        version = tuple(int(v) for v in server.get("version_tuple") or ()) or parse_version(text)
        if family is None and "mariadb" in text.lower():
            family = "mariadb"
    if family is None:
        family = _family_from_label(process) or _family_from_label(str(_target_for(profile.run, process).get("exe", "")))
    return Facts(process, profile.run or {}, profile.counters or {}, mysql, _target_for(profile.run or {}, process),
                 family, version, text, missing)


def _counter_entries(counters: Any) -> dict[str, Any]:
    """Flatten the shapes counters.json may take into name → value-or-record."""
    if isinstance(counters, Mapping):
        for key in ("counters", "events", "values"):
            inner = counters.get(key)
            if isinstance(inner, (Mapping, list)):
                return _counter_entries(inner)
        return dict(counters)
    if isinstance(counters, list):
        out = {}
        for item in counters:
            if isinstance(item, Mapping):
                name = item.get("event") or item.get("name")
                if name:
                    out[str(name)] = item
        return out
    return {}


def _record_value(record: Any) -> float | None:
    if isinstance(record, Mapping):
        for key in ("value", "scaled", "count", "counter-value"):
            if key in record:
                return number(record[key])
        return None
    return number(record)


def _bare(name: str) -> str:
    name = name.lower().strip()
    if "/" in name:  # cpu/cycles/ or cpu_core/instructions/u
        parts = [p for p in name.split("/") if p]
        name = parts[1] if len(parts) > 1 else parts[0]
    return name.split(":")[0]


def counter_value(counters: Any, name: str) -> float | None:
    """Value of a counter by generic name (aliases, ``:u`` suffixes, ``cpu/x/`` forms allowed)."""
    wanted = set(_COUNTER_ALIASES.get(name, (name,)))
    entries = _counter_entries(counters)
    if name in entries and _record_value(entries[name]) is not None:
        return _record_value(entries[name])
    values = [_record_value(rec) for key, rec in entries.items() if _bare(str(key)) in wanted]
    found = [v for v in values if v is not None]
    return sum(found) if found else None

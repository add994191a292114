"""Safe message templates: ``{name}``, ``{name.field}``, ``{name:pct}``, ``{x:.1f}``; no code."""

from __future__ import annotations

import re
import string
from typing import Any, Mapping

_FORMATTER = string.Formatter()
_SPEC_CHARS = set("0123456789.,_%+-<>^= dfegsxXn")
MISSING = "n/a"


def _fields(text: str) -> list[tuple[str, str, str | None]]:
    return [(name, spec or "", conv) for _, name, spec, conv in _FORMATTER.parse(text) if name is not None]


def check_template(text: str, names: set[str]) -> str:
    """A problem with the template as one line, or '' when it is fine."""
    try:
        fields = _fields(text)
    except ValueError as err:
        return f"{err} (use {{{{ and }}}} for literal braces)"
    for name, spec, conv in fields:
        if conv is not None:
            return f"conversions like !{conv} are not allowed in '{{{name}}}'"
        if not name or any(c in name for c in "[]()"):
            return f"field '{{{name}}}' must be an evidence name, optionally .field"
        if name.split(".")[0] not in names:
            return f"field '{{{name}}}' refers to unknown evidence"
        if spec and spec not in ("pct", "us", "list") and (not set(spec) <= _SPEC_CHARS or re.search(r"\d{3}", spec)):
            return f"format '{spec}' in '{{{name}}}' is not allowed"
    return ""


def lookup(values: Mapping[str, Any], dotted: str) -> Any:
    """``a.b`` walks dict keys only (never attributes); a dict with 'value' stands for it."""
    cur: Any = values
    for part in dotted.split("."):
        if not isinstance(cur, Mapping) or part not in cur:
            return None
        cur = cur[part]
    return cur


def scalar(value: Any) -> Any:
    return value.get("value") if isinstance(value, Mapping) else value


def format_value(value: Any, spec: str) -> str:
    value = scalar(value)
    if value is None:
        return MISSING
    if spec == "pct":
        return f"{float(value) * 100:.1f}%" if isinstance(value, (int, float)) else str(value)
    if spec == "us":
        return f"{float(value):.1f} µs" if isinstance(value, (int, float)) else str(value)
    if spec == "list" or isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value) if isinstance(value, (list, tuple)) else str(value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if spec:
        try:
            return format(value, spec)
        except (ValueError, TypeError):
            return str(value)
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def render(text: str, values: Mapping[str, Any]) -> str:
    """Fill a checked template from evidence; missing values print as 'n/a'."""
    out = []
    for literal, name, spec, _ in _FORMATTER.parse(text):
        out.append(literal)
        if name is not None:
            out.append(format_value(lookup(values, name), spec or ""))
    return "".join(out)

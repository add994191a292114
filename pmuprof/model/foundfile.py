"""findings.json read back: what history and the fleet compare between runs, each value checked.

findings.json is written by the report stage (report/jsonw.py) from the Diagnosis; a later run, a
nightly index or another host reads it as data that may be damaged or hand-edited."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SEVERITIES = ("info", "warning", "critical")


@dataclass(frozen=True)
class FoundFinding:
    """One finding of a findings.json, as runs are compared: which rule, how grave, how large."""

    rule: str
    severity: str  # info, warning or critical
    title: str
    share: float  # 0..1; 0 when the finding states none

    def as_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "severity": self.severity, "title": self.title, "share": self.share}


def share_value(value: Any) -> float | None:
    """A findings.json share as a number in 0..1; 0 when the finding has none; None when it is damaged
    (text, NaN, out of range): never read as 0, which would show as an improvement."""
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    share = float(value)
    return share if 0.0 <= share <= 1.0 else None  # NaN fails both comparisons


def found_findings(document: Any, notes: list[str]) -> tuple[tuple[FoundFinding, ...], bool]:
    """The findings of a findings.json document in its order, and False when one is damaged (a note in
    ``notes`` says which; the damaged one is left out)."""
    items = document.get("findings", []) if isinstance(document, dict) else []
    out, whole = [], True
    for f in items if isinstance(items, list) else []:
        if not isinstance(f, dict):
            continue
        rule, share = str(f.get("rule", "?")), share_value(f.get("share"))
        if share is None:
            notes.append(
                f"findings.json damaged: {rule} has share {str(f.get('share'))[:40]!r}, not a number from 0 to 1"
            )
            whole = False
            continue
        severity = f.get("severity", "info")
        if severity not in SEVERITIES:
            notes.append(
                f"findings.json damaged: {rule} has severity {str(severity)[:40]!r}, not one of {', '.join(SEVERITIES)}"
            )
            whole = False
            continue
        out.append(FoundFinding(rule, severity, str(f.get("title", "")), share))
    return tuple(out), whole

"""Compare two profiles: normalised self/inclusive share deltas per function and a differential flame graph."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping

from .. import __version__, outfile
from ..errors import InputError
from ..model.profile import Profile, Stack
from .facts import event_names
from .flame import build_tree
from .html import render, write_text

DIFF_HTML = "diff.html"
DIFF_JSON = "diff.json"
TABLE_ROWS = 60


@dataclass(frozen=True)
class DiffRow:
    """One function's share of all samples before and after (0..1), self and inclusive."""

    name: str
    self_before: float
    self_after: float
    incl_before: float
    incl_after: float

    @property
    def self_delta(self) -> float:
        return self.self_after - self.self_before

    @property
    def incl_delta(self) -> float:
        return self.incl_after - self.incl_before

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "self_before": round(self.self_before, 6), "self_after": round(self.self_after, 6),
            "self_delta": round(self.self_delta, 6),
            "inclusive_before": round(self.incl_before, 6), "inclusive_after": round(self.incl_after, 6),
            "inclusive_delta": round(self.incl_delta, 6),
        }


@dataclass(frozen=True)
class DiffResult:
    """Two profiles compared on shares (each side normalised by its own total)."""

    before: Profile
    after: Profile
    rows: tuple[DiffRow, ...]
    notes: tuple[str, ...] = ()

    def row(self, name: str) -> DiffRow | None:
        return next((r for r in self.rows if r.name == name), None)

    def biggest(self, key: str = "self", limit: int = TABLE_ROWS) -> list[DiffRow]:
        """Rows with the largest absolute change (self or inclusive), ties by name."""
        attr = "self_delta" if key == "self" else "incl_delta"
        return sorted(self.rows, key=lambda r: (-abs(getattr(r, attr)), r.name))[:limit]


def _rename_root(stacks: Mapping[Stack, int], name: str) -> dict[Stack, int]:
    out: dict[Stack, int] = {}
    for stack, count in stacks.items():
        key = (name,) + stack[1:] if stack else stack
        out[key] = out.get(key, 0) + count
    return out


def _align_roots(before: Profile, after: Profile) -> tuple[Profile, tuple[str, ...]]:
    """When each side has one process under different names (mysqld vs mariadbd, pid suffixes), match them."""
    b_roots, a_roots = before.processes(), after.processes()
    if len(b_roots) == 1 and len(a_roots) == 1 and b_roots != a_roots:
        stacks = _rename_root(before.stacks, a_roots[0])
        renamed = replace(before, stacks=stacks)
        return renamed, (f"process '{b_roots[0]}' (before) compared as '{a_roots[0]}' (after)",)
    return before, ()


def diff_profiles(before: Profile, after: Profile) -> DiffResult:
    """Per-function self and inclusive share deltas (after minus before), every function of either side."""
    if not before.total or not after.total:
        empty = "BEFORE" if not before.total else "AFTER"
        raise InputError(f"{empty} profile has no samples", "diff two captures that each recorded samples")
    before, notes = _align_roots(before, after)
    tb, ta = before.total, after.total
    sb, sa = before.self_counts(), after.self_counts()
    ib, ia = before.inclusive_counts(), after.inclusive_counts()
    names = sorted(set(ib) | set(ia))
    rows = tuple(DiffRow(n, sb.get(n, 0) / tb, sa.get(n, 0) / ta, ib.get(n, 0) / tb, ia.get(n, 0) / ta) for n in names)
    return DiffResult(before, after, rows, notes)


def _side(profile: Profile) -> dict[str, Any]:
    return {
        "source": profile.source, "samples": profile.total, "processes": profile.processes(),
        "event": event_names(profile)[1] or profile.unit,
        "started": profile.run.started, "duration_s": profile.run.duration_s,
    }


def diff_document(result: DiffResult, limit: int = TABLE_ROWS) -> dict[str, Any]:
    """diff.json / ``pmuprof diff --json``: both sides and the biggest changes by self and inclusive."""
    return {
        "pmuprof_version": __version__,
        "before": _side(result.before),
        "after": _side(result.after),
        "notes": list(result.notes),
        "self": [r.to_dict() for r in result.biggest("self", limit)],
        "inclusive": [r.to_dict() for r in result.biggest("inclusive", limit)],
    }


def diff_json(result: DiffResult) -> str:
    return json.dumps(diff_document(result), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def diff_payload(result: DiffResult, max_nodes: int = 200_000) -> dict[str, Any]:
    """The diff page's data: the document plus a two-column flame tree (before, after)."""
    doc = diff_document(result)
    doc["kind"] = "diff"
    doc["title"] = "pmuprof diff"
    doc["flame"] = build_tree([result.before.stacks, result.after.stacks], max_nodes)
    return doc


def write_diff(result: DiffResult, out_dir: Path) -> dict[str, Path]:
    """Write diff.html (differential flame graph + tables) and diff.json into ``out_dir``."""
    out_dir = Path(out_dir)
    outfile.ensure_dir(out_dir)
    return {
        DIFF_HTML: write_text(out_dir / DIFF_HTML, render("diff.html.j2", diff_payload(result))),
        DIFF_JSON: write_text(out_dir / DIFF_JSON, diff_json(result)),
    }

"""Compare two profiles: normalised self/inclusive share deltas per function and a differential flame graph."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from collections.abc import Mapping

from .. import __version__, outfile
from ..errors import InputError
from ..model.profile import Profile, Stack
from ..model.stacks import Stacks
from .facts import event_names
from .diffmd import render_diff_markdown
from .flame import build_tree
from .html import render, write_text
from .split import diff_split
from .noise import CONFIDENCE, outside, share_change, smallest_change, wilson

DIFF_HTML = "diff.html"
DIFF_JSON = "diff.json"
DIFF_MD = "diff.md"
TABLE_ROWS = 60
SMALL_SIDE = 1000  # fewer samples on a side: warn (±1.9 points at a 10 % share)
UNEQUAL = 3.0  # one side more than this many times the other: warn
REF_SHARE = 0.10  # the share the warnings quote their noise at
METHOD = (
    "Newcombe's hybrid score interval (Wilson score intervals of both sides combined) for the change "
    "in each function's share, at 95 % confidence; samples taken as independent, so it measures "
    "sampling noise only, not run-to-run variation; each function is tested alone, so among many a few fall "
    "outside by chance"
)


@dataclass(frozen=True)
class DiffRow:
    """One function's share of all samples before and after (0..1), self and inclusive, with the
    95 % interval of each change (noise.share_change): a change whose interval holds 0 is sampling noise."""

    name: str
    self_before: float
    self_after: float
    incl_before: float
    incl_after: float
    self_interval: tuple[float, float] = (0.0, 0.0)
    incl_interval: tuple[float, float] = (0.0, 0.0)

    @property
    def self_delta(self) -> float:
        return self.self_after - self.self_before

    @property
    def incl_delta(self) -> float:
        return self.incl_after - self.incl_before

    @property
    def self_outside_noise(self) -> bool:
        return outside(self.self_interval)

    @property
    def incl_outside_noise(self) -> bool:
        return outside(self.incl_interval)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "self_before": round(self.self_before, 6),
            "self_after": round(self.self_after, 6),
            "self_delta": round(self.self_delta, 6),
            "self_interval": [round(v, 6) for v in self.self_interval],
            "self_outside_noise": self.self_outside_noise,
            "inclusive_before": round(self.incl_before, 6),
            "inclusive_after": round(self.incl_after, 6),
            "inclusive_delta": round(self.incl_delta, 6),
            "inclusive_interval": [round(v, 6) for v in self.incl_interval],
            "inclusive_outside_noise": self.incl_outside_noise,
        }


@dataclass(frozen=True)
class DiffResult:
    """Two profiles compared on shares (each side normalised by its own total)."""

    before: Profile
    after: Profile
    rows: tuple[DiffRow, ...]
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()  # small or unequal sample counts (sample_warnings)

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
        renamed = replace(before, stacks=Stacks.of(stacks))
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
    rows = tuple(
        DiffRow(
            n,
            sb.get(n, 0) / tb,
            sa.get(n, 0) / ta,
            ib.get(n, 0) / tb,
            ia.get(n, 0) / ta,
            share_change(sb.get(n, 0), tb, sa.get(n, 0), ta),
            share_change(ib.get(n, 0), tb, ia.get(n, 0), ta),
        )
        for n in names
    )
    return DiffResult(before, after, rows, notes, sample_warnings(tb, ta))


def sample_warnings(before: int, after: int) -> tuple[str, ...]:
    """Warnings for sides too small, or too unequal, for small changes to mean anything."""
    out = []
    for side, n in (("BEFORE", before), ("AFTER", after)):
        if n < SMALL_SIDE:
            out.append(
                f"{side} has only {n:,} samples: a function at {100 * REF_SHARE:.0f} % of them is known to "
                f"±{100 * _half(REF_SHARE, n):.1f} points; capture longer or at a higher frequency"
            )
    low, high = sorted((before, after))
    if low and high / low > UNEQUAL:
        out.append(
            f"the sides have {before:,} and {after:,} samples ({high / low:.1f}×): the smaller one sets the "
            f"noise; at {100 * REF_SHARE:.0f} % a change under {100 * smallest_change(REF_SHARE, before, after):.1f} "
            f"points is sampling noise"
        )
    return tuple(out)


def _half(share: float, n: int) -> float:
    low, high = wilson(share * n, n)
    return (high - low) / 2


def _side(profile: Profile) -> dict[str, Any]:
    return {
        "source": profile.source,
        "samples": profile.total,
        "processes": profile.processes(),
        "event": event_names(profile)[1] or profile.unit,
        "started": profile.run.started,
        "duration_s": profile.run.duration_s,
    }


def diff_document(result: DiffResult, limit: int = TABLE_ROWS) -> dict[str, Any]:
    """diff.json / ``pmuprof diff --json``: both sides and the biggest changes by self and inclusive."""
    return {
        "pmuprof_version": __version__,
        "before": _side(result.before),
        "after": _side(result.after),
        "notes": list(result.notes),
        "warnings": list(result.warnings),
        "significance": {
            "method": METHOD,
            "confidence": CONFIDENCE,
            "outside_noise": {
                "self": sum(r.self_outside_noise for r in result.rows),
                "inclusive": sum(r.incl_outside_noise for r in result.rows),
            },
        },
        "self": [r.to_dict() for r in result.biggest("self", limit)],
        "inclusive": [r.to_dict() for r in result.biggest("inclusive", limit)],
        "split": diff_split(result.before, result.after),
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
    """Write diff.html (differential flame graph + tables), diff.json and diff.md into ``out_dir``."""
    out_dir = Path(out_dir)
    outfile.ensure_dir(out_dir)
    return {
        DIFF_HTML: write_text(out_dir / DIFF_HTML, render("diff.html.j2", diff_payload(result))),
        DIFF_JSON: write_text(out_dir / DIFF_JSON, diff_json(result)),
        DIFF_MD: write_text(out_dir / DIFF_MD, render_diff_markdown(diff_document(result))),
    }

"""diff.md: the comparison as ticket text (both sides, warnings, the biggest changes and whether each is noise)."""

from __future__ import annotations

from typing import Any
from collections.abc import Mapping

from . import bidi
from .markdown import _inline, _text
from .split import split_markdown

ROWS = 15


def _side(name: str, s: Mapping[str, Any]) -> str:
    dur = f", {s['duration_s']} s" if s.get("duration_s") is not None else ""
    return (
        f"- {name}: {_inline(s.get('source') or '?')}: {s['samples']:,} samples of {_text(s.get('event') or '?')}{dur}"
    )


def _pts(v: float) -> str:
    return f"{100 * v:+.2f}"


def _table(rows: list[Mapping[str, Any]], key: str) -> list[str]:
    out = [
        f"| function | {key} before | {key} after | change (points) | 95 % interval | |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for r in rows[:ROWS]:
        lo, hi = r[f"{key}_interval"]
        verdict = "**outside the noise**" if r[f"{key}_outside_noise"] else "sampling noise"
        out.append(
            f"| {_inline(r['name'])} | {100 * r[f'{key}_before']:.2f} % | {100 * r[f'{key}_after']:.2f} % | "
            f"{_pts(r[f'{key}_delta'])} | {_pts(lo)} … {_pts(hi)} | {verdict} |"
        )
    return out


def render_diff_markdown(doc: Mapping[str, Any]) -> str:
    """The ticket text for a diff document (diff.json's content)."""
    sig = doc["significance"]
    lines = ["## pmuprof diff", "", _side("Before", doc["before"]), _side("After", doc["after"]), ""]
    lines += [f"- Note: {_text(n)}" for n in doc["notes"]]
    lines += [f"- **Warning:** {_text(w)}" for w in doc["warnings"]]
    lines += [
        "",
        f"Shares are of each side's own samples. A change is *outside the noise* when its "
        f"{round(100 * sig['confidence'])} % interval excludes zero ({_text(sig['method'])}). "
        f"Outside the noise: {sig['outside_noise']['self']:,} functions by self share, "
        f"{sig['outside_noise']['inclusive']:,} by inclusive share.",
        "",
    ]
    lines += ["### Biggest changes by self share", ""] + _table(list(doc["self"]), "self") + [""]
    lines += ["### Biggest changes by inclusive share", ""] + _table(list(doc["inclusive"]), "inclusive") + [""]
    lines += split_markdown(list(doc.get("split") or []), _inline)
    return bidi.visible("\n".join(lines))

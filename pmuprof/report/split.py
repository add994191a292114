"""diff's split by thread, processlist state and statement: each group's share of each side's samples,
with the interval of its change (sampling noise only), for inputs that carry thread ids."""

from __future__ import annotations

from typing import TypedDict
from collections.abc import Callable

from ..model.profile import Profile
from .noise import outside, share_change

ROWS = 12  # per table, the biggest changes


class SplitRow(TypedDict):
    """One group's share of each side's samples and its change, with the change's interval."""

    key: str
    before: float
    after: float
    delta: float
    interval: list[float]  # 95 % interval of the change (sampling noise only)
    outside_noise: bool


class SplitTable(TypedDict):
    name: str
    title: str
    rows: list[SplitRow]  # the biggest changes first


def diff_split(before: Profile, after: Profile) -> list[SplitTable]:
    """One entry per table both sides have (thread, state, statement, ...): rows by absolute change."""
    tb, ta = before.threads, after.threads
    if not tb or not ta:
        return []
    after_tables = {t["name"]: t for t in ta["tables"]}
    out: list[SplitTable] = []
    for table in tb["tables"]:
        other = after_tables.get(table["name"])
        if other is None:
            continue
        rb = {r["key"]: r["samples"] for r in table["rows"]}
        ra = {r["key"]: r["samples"] for r in other["rows"]}
        rows: list[SplitRow] = []
        for key in sorted(set(rb) | set(ra)):
            nb, na = rb.get(key, 0), ra.get(key, 0)
            lo, hi = share_change(nb, tb["samples"], na, ta["samples"])
            rows.append(
                {
                    "key": key,
                    "before": nb / tb["samples"],
                    "after": na / ta["samples"],
                    "delta": na / ta["samples"] - nb / tb["samples"],
                    "interval": [lo, hi],
                    "outside_noise": outside((lo, hi)),
                }
            )
        rows.sort(key=lambda r: (-abs(r["delta"]), r["key"]))
        out.append({"name": table["name"], "title": table["title"], "rows": rows[:ROWS]})
    return out


def split_markdown(split: list[SplitTable], inline: Callable[[str], str]) -> list[str]:
    """diff.md's lines for the split (``inline`` quotes a name as code)."""
    lines: list[str] = []
    for table in split:
        lines += [
            f"### {table['title']}",
            "",
            "| group | before | after | change (points) | |",
            "|---|---:|---:|---:|---|",
        ]
        for r in table["rows"]:
            verdict = "**outside the noise**" if r["outside_noise"] else "sampling noise"
            lines.append(
                f"| {inline(r['key'][:120])} | {100 * r['before']:.2f} % | {100 * r['after']:.2f} % | "
                f"{100 * r['delta']:+.2f} | {verdict} |"
            )
        lines.append("")
    return lines

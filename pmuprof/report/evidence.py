"""A finding's evidence as its rule declares it: each item's 'about' text and its value in words and units."""

from __future__ import annotations

from collections.abc import Mapping

from ..findings.evidence import Evidence, number, pct
from ..findings.kinds import KINDS
from ..findings.kinds.base import Declared
from ..findings.kinds.base import is_share as _is_share
from ..findings.model import Finding
from .rows import EvidenceRow

_META = ("samples", "server", "thresholds", "raised_by")  # added by the engine, shown otherwise
MAX_CHAINS = 3
__all__ = ["EvidenceRow", "about", "evidence_rows", "is_share", "levels_text", "number", "pct", "value_text"]


def is_share(item: Declared) -> bool:
    """Whether an item's value is a fraction of the samples (stack and latch shares, *_share paths)."""
    return _is_share(item, KINDS.get(item.kind))


def about(item: Declared) -> str:
    """The rule's own words for the item, else what the matcher reads."""
    if item.about:
        return item.about
    kind = KINDS.get(item.kind)
    template = kind.about if kind else ""
    return template.format(item.what) if template and item.what else item.name.replace("_", " ")


def value_text(item: Declared, value: Evidence | None) -> str:
    """One evidence value in words, by its kind (findings/kinds/): percentages as %, counts with separators."""
    if value is None:
        return "not recorded"
    kind = KINDS.get(item.kind)
    return kind.words(item, value) if kind else value.words(is_share(item))


def _chains(value: Evidence | None) -> list[str]:
    return [text for text in value.chain_texts()[:MAX_CHAINS] if text] if value is not None else []


def evidence_rows(finding: Finding) -> list[EvidenceRow]:
    """Each declared evidence item: what it measures (the rule's 'about') and its value, formatted."""
    declared = finding.declared or tuple(Declared(k, "", "") for k in sorted(finding.evidence) if k not in _META)
    return [
        {
            "name": d.name,
            "about": about(d),
            "text": value_text(d, finding.evidence.get(d.name)),
            "chains": _chains(finding.evidence.get(d.name)),
        }
        for d in declared
    ]


def levels_text(finding: Finding) -> str:
    """'Levels on dive: info from 10.0 %, warning from 25.0 %, critical from 50.0 %' (and what raised it)."""
    th = finding.thresholds
    parts = []
    if th is not None and th.metrics:
        by_name = {d.name: d for d in finding.declared}
        declared = [by_name.get(m, Declared(m, "", "")) for m in th.metrics]
        offcpu = [d for d in declared if th.offcpu and d.kind == "offcpu"]
        counted = [d for d in declared if th.counters and d.kind == "window"]
        oncpu = [d for d in declared if d not in offcpu and d not in counted]
        if oncpu:
            parts.append(_levels([d.name for d in oncpu], th.bounds(False), th.below, all(map(is_share, oncpu)), ""))
        if offcpu:
            parts.append(_levels([d.name for d in offcpu], th.bounds(True), th.below, False, " threads blocked"))
        if counted:
            parts.append(_levels([d.name for d in counted], th.bounds("counters"), th.below, False, ""))
    if finding.raised_by:
        parts.append("raised one level by: " + ", ".join(_raised(finding, r) for r in finding.raised_by))
    return "; ".join(parts)


def _levels(metrics: list[str], bounds: Mapping[str, float | None], below: bool, share: bool, unit: str) -> str:
    word = "up to" if below else "from"
    levels = [
        f"{lvl} {word} {pct(bound) if share else number(bound)}{unit}"
        for lvl, bound in bounds.items()
        if bound is not None
    ]
    return f"Levels on {' / '.join(metrics)}: " + ", ".join(levels)


def _raised(finding: Finding, path: str) -> str:
    """'cost.delay_raised' as the item's about text and the field in words."""
    name, _, rest = path.partition(".")
    item = next((d for d in finding.declared if d.name == name), None)
    head = about(item) if item else name.replace("_", " ")
    return f"{head} ({rest.replace('_', ' ')})" if rest else head

"""The per-second strip's data: samples per second, the top finding's samples per second, and the
flame graph's samples per (tree row, second), so choosing seconds redraws the graph for them alone
(FlameScope's idea) without going back to pmuprof."""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from ..analysis.threads import finding_rows
from ..findings.model import Finding
from ..model.profile import Profile

MAX_SECONDS = 4 * 3600  # a longer span (clock jumps, merged inputs) gets no strip
MAX_CELLS = 400_000  # (tree row, second) pairs embedded at most; beyond, the strip shows counts only


def _top(findings: Iterable[Finding], rule: str = "") -> Finding | None:
    """The verdict's cause (``rule``) when its stacks are known, else the first finding with matched stacks."""
    shown = [f for f in findings if not f.explained_by and f.stacks is not None and len(f.stacks)]
    chosen = [f for f in shown if f.rule == rule]
    return chosen[0] if chosen else (min(shown, key=lambda f: f.sort_key()) if shown else None)


def strip(profile: Profile, findings: Iterable[Finding], tree_rows: np.ndarray, rule: str = "") -> dict[str, Any] | None:
    """None when the input has no sample times (a folded file, perf.data without -T)."""
    s = profile.samples
    if s is None or not s.has_time:
        return None
    timed = s.seconds >= 0
    first, last = s.span()  # type: ignore[misc]
    width = last - first + 1
    if width > MAX_SECONDS:
        return None
    off = s.seconds[timed] - first
    counts = s.counts[timed]
    out: dict[str, Any] = {"first": first, "n": np.bincount(off, weights=counts, minlength=width).astype(int).tolist(),
                           "untimed": int(s.counts[~timed].sum()), "top": None, "top_title": "", "cells": None}
    top = _top(findings, rule)
    if top is not None:
        hit = np.isin(s.rows[timed], finding_rows(profile.stacks, top.process, top.stacks))
        out["top"] = np.bincount(off[hit], weights=counts[hit], minlength=width).astype(int).tolist()
        out["top_title"] = top.title
    if len(tree_rows) == len(profile.stacks):
        node = tree_rows[s.rows[timed]]
        ok = node >= 0
        key = node[ok] * width + off[ok]
        uniq, inverse = np.unique(key, return_inverse=True)
        if len(uniq) <= MAX_CELLS:
            sums = np.bincount(inverse.reshape(-1), weights=counts[ok]).astype(np.int64)
            out["cells"] = {"node": (uniq // width).tolist(), "sec": (uniq % width).tolist(), "n": sums.tolist()}
    return out

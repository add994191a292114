"""The per-second strip's data: samples per second, the top finding's samples per second, the flame
graph's samples per (tree row, second), so choosing seconds redraws the graph for them alone
(FlameScope's idea) without going back to pmuprof, and the capture sources' per-second series that are
shown (series.json: host load, the processlist, watch's trigger, ...) on the same seconds."""

from __future__ import annotations

import datetime as _dt

import numpy as np

from ..findings.diagnosis import Diagnosis
from ..findings.model import Finding
from ..model.profile import Profile, process_rows
from ..model.run import Run
from ..model.samples import BLOCK
from .rows import SecondsStrip, SeriesRow, WallClock

MAX_SECONDS = 4 * 3600  # a longer span (clock jumps, merged inputs) gets no strip
MAX_CELLS = 400_000  # (tree row, second) pairs embedded at most; beyond, the strip shows counts only


def _top(diagnosis: Diagnosis) -> Finding | None:
    """The verdict's cause when its stacks are known, else the first cause with matched stacks."""

    def marked(f: Finding) -> bool:
        return f.stacks is not None and len(f.stacks) > 0

    top = diagnosis.top
    if top is not None and marked(top):
        return top
    return min((f for f in diagnosis.causes if marked(f)), key=Finding.sort_key, default=None)


def wall_clock(run: Run, first: int) -> WallClock | None:
    """Where the strip's second 0 (perf clock second ``first``) starts on the capture host's wall clock:
    ``t0`` epoch seconds, the host's UTC offset and zone. Exact from run.json's clock (CLOCK_MONOTONIC and
    the epoch read together); without one, ``t0`` is run.json's start time, shown in UTC and marked
    approximate (perf starts a few seconds after it); None when neither is known."""
    if run.clock is not None:
        c = run.clock
        return {
            "t0": round(c.epoch_s + (first - c.monotonic_s), 3),
            "offset": c.utc_offset_s,
            "zone": c.zone,
            "exact": True,
        }
    try:
        started = _dt.datetime.fromisoformat(run.started.replace("Z", "+00:00")) if run.started else None
    except ValueError:
        started = None
    if started is None:
        return None
    offset = started.utcoffset()
    return {
        "t0": started.timestamp(),
        "offset": int(offset.total_seconds()) if offset is not None else 0,
        "zone": "",
        "exact": False,
    }


def strip(profile: Profile, diagnosis: Diagnosis, tree_rows: np.ndarray) -> SecondsStrip | None:
    """None when the input has no sample times (a folded file, perf.data without -T).

    The sample table is worked a block of entries at a time: no array as long as the table is made."""
    s = profile.samples
    if s is None or not s.has_time:
        return None
    first, last = s.span()  # type: ignore[misc]
    width = last - first + 1
    if width > MAX_SECONDS:
        return None
    top = _top(diagnosis)
    top_rows = None
    if top is not None:  # a mark per stack row: the finding's rows
        top_rows = np.zeros(len(profile.stacks), dtype=bool)
        top_rows[process_rows(profile.stacks, top.process, top.stacks)] = True
    per_sec, top_sec = np.zeros(width, np.int64), np.zeros(width, np.int64)
    untimed = 0
    for lo in range(0, len(s), BLOCK):
        secs, counts, rows = s.seconds[lo : lo + BLOCK], s.counts[lo : lo + BLOCK], s.rows[lo : lo + BLOCK]
        timed = secs >= 0
        untimed += int(counts[~timed].sum())
        if not timed.all():
            secs, counts, rows = secs[timed], counts[timed], rows[timed]
        off = (secs - first).astype(np.int32)
        per_sec += np.bincount(off, weights=counts, minlength=width).astype(np.int64)
        if top_rows is not None:
            hit = top_rows[rows]
            top_sec += np.bincount(off[hit], weights=counts[hit], minlength=width).astype(np.int64)
    cells = None
    if len(tree_rows) == len(profile.stacks):
        cells = s.cells(lambda lo, hi: tree_rows[s.rows[lo:hi]], first, width, MAX_CELLS)
    shown = series_rows(profile, first, width)
    out: SecondsStrip = {
        "first": first,
        "n": per_sec.tolist(),
        "untimed": untimed,
        "clock": wall_clock(profile.run, first),
        "top": top_sec.tolist() if top is not None else None,
        "top_title": top.title if top is not None else "",
        "cells": {"node": cells[0].tolist(), "sec": cells[1].tolist(), "n": cells[2].tolist()} if cells else None,
    }
    if shown:
        out["series"] = shown
    return out


def series_rows(profile: Profile, first: int, width: int) -> list[SeriesRow]:
    """The shown series on the strip's seconds (``values[i]``: second ``first + i``; None: not measured),
    whatever source kept them; a series with no value in the strip's span is left out."""
    rows = []
    for series in profile.series.shown() if profile.series is not None else ():
        values = series.aligned(first, width)
        if any(v is not None for v in values):
            rows.append(SeriesRow(name=series.name, unit=series.unit, about=series.about, values=list(values)))
    return rows

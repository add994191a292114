"""Stack matchers over one process's Stacks: cost grows with distinct frames and matched stacks.

Patterns are tested once per distinct frame label (a boolean per frame id); the rows a matcher
can touch come from the postings (rows holding a frame); hot frames, context and callers are
found with array operations over those rows only. Latch waits are classified once per process
(findings/latches.py) for the rows whose leaf can be a wait, and every latch matcher then reads
that table.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any, TypeVar, cast
from collections.abc import Callable, Mapping

import numpy as np

from ..model.profile import Profile
from ..model.stacks import Stacks, gather_index
from .knowledge import Latch
from .latches import Attributor, Wait, WaitTable, candidates, latch_words
from .patterns import FrameNames, PatternSet
from .stackshare import Alternative, Ambiguity, Candidate, Chain, LatchDetail, StackShare

MAX_CALLERS = 3
TOP_CHAINS = 3
_NONE = -1
T = TypeVar("T")


class StackIndex:
    """One process's stacks (the process root is frame 0 of every row) with cached pattern look-ups."""

    def __init__(
        self, profile: Profile | None, process: str, attributor: Attributor | None = None, stacks: Stacks | None = None
    ) -> None:
        self.process = process
        self.profile = profile
        self.st: Stacks = stacks if stacks is not None else profile.process_stacks(process)  # type: ignore[union-attr]
        self.total = self.st.total
        self.attributor = attributor
        self._luts: dict[PatternSet, np.ndarray] = {}  # the ids each pattern set marks (few: kept sparse)
        self._waits: WaitTable | None = None
        self._built: dict[str, Any] = {}

    def lut(self, patterns: PatternSet) -> np.ndarray:
        """True per frame id whose label the patterns match (each label tested once; the ids it marks are
        kept, not a boolean per frame: the rules ask for a hundred pattern sets, and a table of 2 M names
        made each 2 MB)."""
        ids = self._luts.get(patterns)
        if ids is None:
            ids = np.flatnonzero(patterns.mask(self.names))
            self._luts[patterns] = ids
        out = np.zeros(len(self.st.frames), dtype=bool)
        out[ids] = True
        return out

    @cached_property
    def names(self) -> FrameNames:
        """The frame table's names prepared for bulk matching, held while this index is (not in a global
        cache: a table of millions of names is hundreds of MB)."""
        return FrameNames.of(self.st.frames)

    def weight(self, rows: np.ndarray) -> int:
        return int(self.st.counts[rows].sum()) if len(rows) else 0

    def built(self, key: str, build: Callable[[], T]) -> T:
        """What ``build`` gives for this process, built once (an index a matcher kind keeps beside this one:
        offcpumatch.py's off-CPU stacks)."""
        if key not in self._built:
            self._built[key] = build()
        return cast(T, self._built[key])

    def waits(self) -> WaitTable:
        """The latch waits of this process's rows (classified once)."""
        if self._waits is None:
            self._waits = _wait_table(self.st, self.attributor, self.names)
        return self._waits


def _wait_table(st: Stacks, attributor: Attributor | None, names: FrameNames) -> WaitTable:
    rows_out: list[int] = []
    waits: list[Wait] = []
    latches: list[str] = []
    modes: list[str] = []
    if attributor is not None and len(st):
        walked = st.self_hits(attributor.prime(st.frames, names))[0]
        attributor.learn(st.ids[gather_index(st.offsets[walked], st.lengths[walked])])
        for row in walked.tolist():
            found = attributor.attribute(st.row(row)[1:])
            if found is not None:
                rows_out.append(row)
                waits.append(found[0])
                latches.append(found[1])
                modes.append(found[2])
    rows = np.asarray(rows_out, dtype=np.int64)
    return WaitTable(rows, tuple(waits), tuple(latches), tuple(modes), st.counts[rows])


def _empty() -> StackShare:
    return StackShare(value=0.0, share=0.0, count=0, hot=None, rows=np.zeros(0, np.int64))


def match_stack(index: StackIndex, spec: Mapping[str, PatternSet], skip: PatternSet) -> StackShare:
    """Share of samples whose stack matches; the hot frame and the callers that explain it."""
    st = index.st
    if "self" in spec:  # the leaf, or a call inlined where the leaf is (perf's self time, by inline chain)
        rows, at = st.self_hits(index.lut(spec["self"]))
    else:
        rows = st.rows_with(index.lut(spec["inclusive"])).astype(np.int64)
        at = _deepest(st, rows, index.lut(spec["inclusive"]))
    keep = _context(index, spec, rows, at)
    rows, at = rows[keep], at[keep]
    if not len(rows):
        return _empty()
    counts = st.counts[rows]
    count = int(counts.sum())
    total = index.total or 1
    hot = st.ids[at]
    callers = _callers(st, rows, at, index.lut(skip))
    ranked = _rank_chains(st, np.column_stack((hot, callers)), counts)
    top_frames, _, hot_id = ranked[0]
    hot_share = int(counts[hot == hot_id].sum()) / total
    return StackShare(
        value=count / total,
        share=count / total,
        count=count,
        rows=rows,
        hot=top_frames[0],
        hot_share=hot_share,
        callers=top_frames[1:],
        chain=chain_text(top_frames[0], hot_share, top_frames[1:]),
        chains=tuple(
            Chain(f, round(n / total, 6), chain_text(f[0], n / total, f[1:])) for f, n, _ in ranked[:TOP_CHAINS]
        ),
    )


def match_latch(index: StackIndex, spec: Mapping[str, Any]) -> StackShare:
    """Share of samples waiting for one of the latches (optionally inside / not inside some callers); with
    ``ambiguous``, of the samples the stack cannot attribute to one latch (no one rule covers all of its
    candidates), with the candidates named."""
    table = index.waits()
    latches = index.attributor.latches if index.attributor else {}
    if spec.get("ambiguous"):
        mask = table.unclaimed_mask(latches, spec.get("latches") or frozenset())
    else:
        mask = table.latch_mask(spec["latches"])
    if "modes" in spec:
        mask &= np.fromiter((m in spec["modes"] for m in table.mode), dtype=bool, count=len(table.mode))
    if "inside" in spec:
        mask &= np.isin(table.rows, index.st.rows_with(index.lut(spec["inside"])))
    if "not_inside" in spec:
        mask &= ~np.isin(table.rows, index.st.rows_with(index.lut(spec["not_inside"])))
    picked = np.flatnonzero(mask).tolist()
    if not picked:
        return _empty()
    counts = table.counts.tolist()
    chains: dict[tuple[str, ...], int] = {}
    modes: dict[str, int] = {}
    kinds: dict[str, int] = {}
    for i in picked:
        wait, n = table.waits[i], counts[i]
        key = ((wait.acquirer,) if wait.acquirer else ()) + wait.callers
        chains[key] = chains.get(key, 0) + n
        kinds[wait.kind] = kinds.get(wait.kind, 0) + n
        if table.mode[i]:
            modes[table.mode[i]] = modes.get(table.mode[i], 0) + n
    count = sum(counts[i] for i in picked)
    total = index.total or 1
    ambiguity = (
        _ambiguity([table.latch[i] for i in picked], [counts[i] for i in picked], total, latches)
        if spec.get("ambiguous")
        else None
    )
    ranked = sorted(chains.items(), key=lambda kv: (-kv[1], kv[0]))
    top, top_n = ranked[0]
    hot = top[0] if top else "(unknown caller)"
    by_mode = sorted(modes.items(), key=lambda kv: (-kv[1], kv[0]))
    return StackShare(
        value=count / total,
        share=count / total,
        count=count,
        rows=table.rows[picked],
        hot=hot,
        hot_share=top_n / total,
        callers=top[1:],
        chain=chain_text(hot, top_n / total, top[1:]),
        chains=tuple(
            Chain(c, round(n / total, 6), chain_text(c[0] if c else "?", n / total, c[1:]))
            for c, n in ranked[:TOP_CHAINS]
        ),
        latch=LatchDetail(
            modes=dict(by_mode),
            mode=by_mode[0][0] if by_mode else "",
            kinds=kinds,
            modes_text=", ".join(f"{m} {n / count:.0%}" for m, n in by_mode) or "not known",
            ambiguity=ambiguity,
        ),
    )


def _ambiguity(keys: list[str], counts: list[int], total: int, latches: Mapping[str, Latch]) -> Ambiguity:
    """The candidates of ambiguous waits in words: every "a or b" with its share, most samples first, and
    the candidate latches of them all ("page latch or index tree latch")."""
    by_key: dict[str, int] = {}
    for key, n in zip(keys, counts):
        by_key[key] = by_key.get(key, 0) + n
    ranked = sorted(by_key.items(), key=lambda kv: (-kv[1], kv[0]))
    ids = list(dict.fromkeys(i for key, _ in ranked for i in candidates(key) if i in latches))
    names = _listed([latches[i].words for i in ids], "or")
    return Ambiguity(
        alternatives=tuple(
            Alternative(tuple(candidates(key)), latch_words(key, latches), round(n / total, 6), n) for key, n in ranked
        ),
        candidates=tuple(
            Candidate(i, latches[i].name, latches[i].words, latches[i].rule or "", latches[i].ps_name) for i in ids
        ),
        names=names,
        title=names[:1].upper() + names[1:],
        key=ranked[0][0] if ranked else "",
        split=", ".join(f"{latch_words(key, latches)} {n / total:.1%}" for key, n in ranked),
        rules=_listed(sorted({r for i in ids if (r := latches[i].rule)}), "and"),
        ps_names="; ".join(latches[i].ps_name for i in ids if latches[i].ps_name),
    )


def _listed(words: list[str], last: str) -> str:
    """'a', 'a or b', 'a, b or c'."""
    return f" {last} ".join(words) if len(words) < 3 else ", ".join(words[:-1]) + f" {last} " + words[-1]


def chain_text(hot: str, share: float, callers: tuple[str, ...] | list[str]) -> str:
    return " ← ".join((f"{hot} {share * 100:.1f}%", *callers))


def _segments(st: Stacks, rows: np.ndarray, below_root: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Occurrence indices of the rows (without their root frame) and each row's first index in them."""
    skip = 1 if below_root else 0
    lengths = st.lengths[rows] - skip
    occ = gather_index(st.offsets[rows] + skip, lengths)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1])) if len(rows) else np.zeros(0, np.int64)
    return occ, starts


def _deepest(st: Stacks, rows: np.ndarray, lut: np.ndarray) -> np.ndarray:
    """Per row (each holds a marked frame below its root), the occurrence index of the deepest one."""
    if not len(rows):
        return np.zeros(0, np.int64)
    occ, starts = _segments(st, rows)
    return np.maximum.reduceat(np.where(lut[st.ids[occ]], occ, _NONE), starts)


def _first(st: Stacks, rows: np.ndarray, lut: np.ndarray) -> np.ndarray:
    """Per row, the occurrence index of the first marked frame below the root (a huge value: none)."""
    big = np.iinfo(np.int64).max
    if not len(rows):
        return np.zeros(0, np.int64)
    occ, starts = _segments(st, rows)
    return np.minimum.reduceat(np.where(lut[st.ids[occ]], occ, big), starts)


def _context(index: StackIndex, spec: Mapping[str, PatternSet], rows: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Which matched rows satisfy inside / not_inside (callers above the hot frame) and leaf / leaf_not."""
    st = index.st
    keep = np.ones(len(rows), dtype=bool)
    for key, want in (("inside", True), ("not_inside", False)):
        if key in spec and len(rows):
            lut = index.lut(spec[key])
            holding = np.isin(rows, st.rows_with(lut))
            above = np.zeros(len(rows), dtype=bool)
            above[holding] = _first(st, rows[holding], lut) < at[holding]
            keep &= above if want else ~above
    for key, want in (("leaf", True), ("leaf_not", False)):
        if key in spec and len(rows):  # the leaf, or any call inlined where the leaf is
            holding = np.isin(rows, st.self_hits(index.lut(spec[key]), rows)[0])
            keep &= holding if want else ~holding
    return keep


def _callers(st: Stacks, rows: np.ndarray, at: np.ndarray, skip: np.ndarray) -> np.ndarray:
    """Per matched row, up to MAX_CALLERS nearest callers above ``at`` (frame ids, -1 padded): not in
    ``skip``, not the hot frame itself, consecutive repeats collapsed."""
    n = len(rows)
    out = np.full((n, MAX_CALLERS), _NONE, dtype=np.int64)
    hot = st.ids[at].astype(np.int64)
    last = np.full(n, _NONE, dtype=np.int64)
    found = np.zeros(n, dtype=np.int64)
    first = st.offsets[rows] + 1  # the process root is no caller
    cur = at - 1
    live = np.flatnonzero(cur >= first)
    while len(live):
        frame = st.ids[cur[live]].astype(np.int64)
        ok = ~skip[frame] & (frame != last[live]) & (frame != hot[live])
        took = live[ok]
        out[took, found[took]] = frame[ok]
        last[took] = frame[ok]
        found[took] += 1
        cur[live] -= 1
        live = live[(cur[live] >= first[live]) & (found[live] < MAX_CALLERS)]
    return out


def _rank_chains(st: Stacks, keys: np.ndarray, counts: np.ndarray) -> list[tuple[tuple[str, ...], int, int]]:
    """(frames, samples, hot frame id) per distinct hot-and-callers key, most samples first, ties by name."""
    bits = max(1, int(len(st.frames) + 1).bit_length())
    if bits * keys.shape[1] <= 63:  # one int64 per key: a plain sort instead of a row-wise unique
        packed = np.zeros(len(keys), dtype=np.int64)
        for col in range(keys.shape[1]):
            packed = (packed << bits) | (keys[:, col] + 1)
        _, first, inverse = np.unique(packed, return_index=True, return_inverse=True)
        uniq = keys[first]
    else:
        uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    sums = np.bincount(inverse.reshape(-1), weights=counts).astype(np.int64)
    cutoff = np.sort(sums)[-min(TOP_CHAINS, len(sums))]
    top = np.flatnonzero(sums >= cutoff).tolist()
    names = [(tuple(st.frames[f] for f in uniq[i].tolist() if f >= 0), int(sums[i]), int(uniq[i][0])) for i in top]
    return sorted(names, key=lambda kv: (-kv[1], kv[0]))

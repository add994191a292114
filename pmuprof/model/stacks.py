"""Distinct stacks as integer arrays: each frame label stored once, one row of frame ids per stack.

A ``Stacks`` is what a folded file holds — distinct stacks (root first; the first frame is the
process label) with sample counts — laid out for work that grows with what is distinct: ``frames``
(id → label), ``ids`` (every row's frame ids, concatenated: uint16 when there are at most 65,536
frames, as in most profiles, else int32; see ``id_dtype``), ``offsets`` (row i is
``ids[offsets[i]:offsets[i+1]]``) and ``counts``. No Python object exists per frame occurrence.
Postings (which rows hold a frame) are built on first use and serve exact inclusive counts and the
rules' stack matching (findings/stackmatch.py). It is also a read-only ``Mapping[Stack, int]``, so
small consumers and tests can treat it as the dict of tuples it replaces.
"""

from __future__ import annotations

import heapq
from collections import Counter
from functools import cached_property
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from .frameindex import FrameIndex
from .frametable import FrameTable
from .labels import INLINE_SUFFIX

Stack = tuple[str, ...]

_HASH_SEED = 0x5EED_57AC
_NARROW_FRAMES = 1 << 16  # at most this many frames: ids fit in uint16, half the memory of int32


def id_dtype(nframes: int) -> type:
    """The dtype of frame ids over ``nframes`` frames: uint16 when they fit, else int32. Ids are
    indices, never negative: code that mixes them with -1 (or adds to them) widens them first."""
    return np.uint16 if nframes <= _NARROW_FRAMES else np.int32


_CHUNK_ROWS = 65536


class Stacks(Mapping[Stack, int]):
    """Distinct stacks (rows) over a frame table; immutable once built."""

    def __init__(self, frames: Sequence[str], ids: np.ndarray, offsets: np.ndarray, counts: np.ndarray) -> None:
        # a FrameTable stays one (its names made on access), anything else becomes a tuple
        self.frames: Sequence[str] = frames if isinstance(frames, FrameTable) else tuple(frames)
        self.ids: np.ndarray = np.ascontiguousarray(ids, dtype=id_dtype(len(self.frames)))
        self.offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        self.counts = np.ascontiguousarray(counts, dtype=np.int64)
        for arr in (self.ids, self.offsets, self.counts):
            arr.setflags(write=False)
        self._parent: tuple[Stacks, int] | None = None  # (rows' source, first row) for a contiguous take

    # -- building -------------------------------------------------------------------------------

    @classmethod
    def of(cls, stacks: Stacks | Mapping[Stack, int] | Iterable[tuple[Stack, int]]) -> Stacks:
        """A Stacks from a mapping or (stack, count) pairs; empty stacks are dropped, repeats summed."""
        if isinstance(stacks, Stacks):
            return stacks
        builder = StacksBuilder()
        for stack, count in stacks.items() if isinstance(stacks, Mapping) else stacks:
            if stack and count:
                builder.add(stack, int(count))
        return builder.build()

    # -- Mapping[Stack, int] ----------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.counts)

    def __iter__(self) -> Iterator[Stack]:
        for stack, _ in self.items():
            yield stack

    def __getitem__(self, stack: Stack) -> int:
        return self._as_dict[tuple(stack)]

    def __contains__(self, stack: object) -> bool:
        return isinstance(stack, tuple) and stack in self._as_dict

    def items(self) -> Iterator[tuple[Stack, int]]:  # type: ignore[override]
        """(stack, count) per row, in row order; rows converted a chunk at a time (memory stays flat)."""
        frames = self.frames
        for lo in range(0, len(self.counts), _CHUNK_ROWS):
            hi = min(lo + _CHUNK_ROWS, len(self.counts))
            base = int(self.offsets[lo])
            ids = self.ids[base : int(self.offsets[hi])].tolist()
            offs = (self.offsets[lo : hi + 1] - base).tolist()
            for i, count in enumerate(self.counts[lo:hi].tolist()):
                yield tuple([frames[f] for f in ids[offs[i] : offs[i + 1]]]), count

    def values(self) -> Iterator[int]:  # type: ignore[override]
        return iter(self.counts.tolist())

    def row(self, i: int) -> Stack:
        return tuple(self.frames[f] for f in self.ids[self.offsets[i] : self.offsets[i + 1]].tolist())

    @cached_property
    def _as_dict(self) -> dict[Stack, int]:
        return dict(self.items())

    # -- shape ------------------------------------------------------------------------------------

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    @cached_property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def rows_at(self, at: np.ndarray) -> np.ndarray:
        """The row of each of the frame occurrences ``at`` (sorted indices into ``ids``): a search per
        occurrence, no array as long as ``ids`` (16 M occurrences made 64 MiB of rows, at the report's peak)."""
        return np.searchsorted(self.offsets, at, side="right") - 1

    @cached_property
    def leaf_ids(self) -> np.ndarray:
        return self.ids[self.offsets[1:] - 1] if len(self.counts) else np.zeros(0, self.ids.dtype)

    @cached_property
    def inlined(self) -> np.ndarray:
        """A boolean per frame id: an inlined call (``name_[i]``)."""
        return np.fromiter((f.endswith(INLINE_SUFFIX) for f in self.frames), dtype=bool, count=len(self.frames))

    @cached_property
    def self_starts(self) -> np.ndarray:
        """Per row, the position of its innermost frame that is not an inlined call: the leaf, or the
        function the leaf's inlined calls are in. Frames from there to the leaf are the row's *self*
        frames: the CPU was in all of them at once (never the process root)."""
        at = (self.offsets[1:] - 1).astype(np.int64)
        inl = self.inlined
        if not len(at) or not inl.any():
            return at
        first = self.offsets[:-1].astype(np.int64) + 1
        live = np.flatnonzero(inl[self.ids[at]] & (at > first))
        while len(live):
            at[live] -= 1
            live = live[inl[self.ids[at[live]]] & (at[live] > first[live])]
        return at

    def self_hits(self, lut: np.ndarray, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(rows, positions): the rows (of ``rows``, else all; process-root-only rows never) with a self
        frame the boolean ``lut`` marks, and where the innermost such frame is."""
        real, leaf, leaf_ids, above = self._self_frames
        found = np.where(lut[leaf_ids], leaf, -1)
        for k, (live, ids) in enumerate(above, 1):  # k frames above the leaf, innermost first
            hit = live[lut[ids]]
            hit = hit[found[hit] < 0]
            found[hit] = leaf[hit] - k
        if rows is None:
            keep = found >= 0
            return real[keep], found[keep]
        every = np.full(len(self.counts), -1, dtype=np.int64)
        every[real] = found
        rows = np.asarray(rows, dtype=np.int64)
        found = every[rows]
        keep = found >= 0
        return rows[keep], found[keep]

    @cached_property
    def _self_frames(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
        """Every row's self frames laid out for ``self_hits``, which the rules ask for dozens of times:
        (the rows below the process root, their leaf positions, their leaf frame ids, and per step k up
        from the leaf (which of those rows have a self frame there, as indices into them, and its id))."""
        real = np.flatnonzero(self.lengths > 1)
        leaf = self.offsets[real + 1].astype(np.int64) - 1
        start = self.self_starts[real]
        above = []
        live = np.flatnonzero(leaf > start)
        k = 1
        while len(live):
            above.append((live, self.ids[leaf[live] - k]))
            k += 1
            live = live[leaf[live] - k >= start[live]]
        return real, leaf, self.ids[leaf], above

    @cached_property
    def root_ids(self) -> np.ndarray:
        return self.ids[self.offsets[:-1]] if len(self.counts) else np.zeros(0, self.ids.dtype)

    @cached_property
    def _roots(self) -> dict[str, int]:
        """The labels stacks begin with (the process roots: a few) and their ids."""
        return {self.frames[i]: i for i in np.unique(self.root_ids).tolist()}

    def root_id(self, label: str) -> int:
        """The id of a process root label, -1 when no stack begins with it (no index of every name)."""
        return self._roots.get(label, -1)

    @cached_property
    def frame_index(self) -> FrameIndex:
        """Frame name → id (a Mapping in two arrays, not a dict entry per name)."""
        return FrameIndex(self.frames)

    def lut(self, names: Iterable[str]) -> np.ndarray:
        """A boolean per frame id: True for the given labels."""
        out = np.zeros(len(self.frames), dtype=bool)
        index = self.frame_index
        hit = [index[n] for n in names if n in index]
        out[hit] = True
        return out

    def blocks(self) -> list[tuple[int, int]]:
        """Consecutive row ranges of about a million frame occurrences each: for work on every
        occurrence whose temporaries should stay the size of a block, not of the profile."""
        return _row_blocks(self.offsets, _BLOCK_OCC)

    # -- postings ---------------------------------------------------------------------------------

    @cached_property
    def _postings(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """(rows, begin, end, first): the rows holding each frame below the process root, once per row,
        sorted: frame f's are ``rows[begin[f]:end[f]] - first``. Built on first use a block of rows at
        a time: each block's rows in frame order are kept (as many int32 as the result), not its
        temporaries, then placed. A contiguous take shares its source's ``rows`` and keeps only where
        each frame's run of its own rows lies there (``first``: its first row in the source)."""
        if self._parent is not None:
            return _cut_postings(*self._parent, len(self.counts))
        nf = len(self.frames)
        blocks = []
        sizes = np.zeros(nf, dtype=np.int64)
        for lo, hi in _row_blocks(self.offsets, _POSTING_OCC):
            frame, row = _block_postings(self, lo, hi)
            # the block's frames and how many rows each holds, kept sparse: a table of millions of frame
            # names would otherwise keep a count per frame per block
            cut = np.flatnonzero(frame[1:] != frame[:-1]) + 1 if len(frame) else np.zeros(0, np.int64)
            starts = np.concatenate(([0], cut)).astype(np.int64) if len(frame) else cut
            runs = np.diff(np.append(starts, len(frame)))
            held = frame[starts].astype(np.int64)
            blocks.append((row, held, runs))
            sizes[held] += runs
        start = np.concatenate(([0], np.cumsum(sizes)))
        rows = np.empty(int(start[-1]), dtype=np.int32)
        placed = start[:-1].copy()  # per frame: where its next block's rows go
        while blocks:
            row, held, runs = blocks.pop(0)
            first = np.cumsum(runs) - runs  # where each frame's rows begin inside this block
            at = np.arange(len(row), dtype=np.int64)
            at += np.repeat(placed[held] - first, runs)
            rows[at] = row
            placed[held] += runs
        rows.setflags(write=False)
        return rows, start[:-1], start[1:], 0

    def release_postings(self) -> None:
        """Free the postings (built again if asked for): for a stage that needs the memory more."""
        self.__dict__.pop("_postings", None)

    def rows_with(self, lut: np.ndarray) -> np.ndarray:
        """Sorted row indices holding, below the root, any frame the boolean ``lut`` marks."""
        rows, begin, end, first = self._postings
        hit = np.flatnonzero(lut)
        if not len(hit):
            return np.zeros(0, dtype=np.int32)
        if len(hit) == 1:
            mine = rows[begin[hit[0]] : end[hit[0]]]
            return mine - np.int32(first) if first else mine
        mark = np.zeros(len(self.counts), dtype=bool)
        for f in hit.tolist():
            mark[rows[begin[f] : end[f]] - np.int32(first)] = True
        return np.flatnonzero(mark).astype(np.int32)

    # -- counts -----------------------------------------------------------------------------------

    def frame_self(self) -> np.ndarray:
        """Samples per frame id as the leaf of a stack (process-root-only stacks excluded)."""
        real = self.lengths > 1
        return np.bincount(self.leaf_ids[real], weights=self.counts[real], minlength=len(self.frames)).astype(np.int64)

    def frame_inclusive(self) -> np.ndarray:
        """Samples per frame id with the frame anywhere below the process root, once per stack."""
        rows, begin, end, first = self._postings
        counts = self.counts  # positions outside this Stacks' runs are never summed: clipped, not read
        return _sum_per_frame(begin, end, lambda a, b: counts.take(rows[a:b] - np.int32(first), mode="clip"))

    def inclusive_of(self, wanted: np.ndarray) -> np.ndarray:
        """``frame_inclusive`` for the wanted frame ids only (others 0), from their occurrences alone:
        cheaper than the postings when few frames are asked for and nothing else needs the postings."""
        nf = len(self.frames)
        lut = np.zeros(nf, dtype=bool)
        lut[wanted] = True
        at = np.flatnonzero(lut[self.ids])
        rows = self.rows_at(at)
        below = at != self.offsets[rows]
        # each (row, frame) pair once: a sort and a neighbour test (np.unique's hash path took 10 of a
        # 2.3 M-sample report's 24 CPU seconds here; this takes about 1)
        pairs = np.sort(rows[below].astype(np.int64) * nf + self.ids[at][below])
        pairs = pairs[np.concatenate(([True], pairs[1:] != pairs[:-1]))] if len(pairs) else pairs
        return np.bincount(pairs % nf, weights=self.counts[pairs // nf], minlength=nf).astype(np.int64)

    def self_counts(self) -> Counter[str]:
        """Samples whose leaf is each function (the process root excluded)."""
        return _counter(self.frames, self.frame_self())

    def inclusive_counts(self) -> Counter[str]:
        """Samples with each function anywhere on the stack (counted once per stack; the root excluded)."""
        return _counter(self.frames, self.frame_inclusive())

    def top_self(self, limit: int) -> list[tuple[str, int]]:
        """``sorted(self_counts().items(), key=lambda kv: (-kv[1], kv[0]))[:limit]``, without the Counter."""
        own = self.frame_self()
        return [(self.frames[i], int(own[i])) for i in top_frames(self.frames, own, limit)]

    def per_root(self) -> dict[str, int]:
        """Samples per process label (root frame)."""
        sums = np.bincount(self.root_ids, weights=self.counts, minlength=len(self.frames))
        return {self.frames[f]: int(sums[f]) for f in np.flatnonzero(sums).tolist()}

    # -- subsets and relabelling ------------------------------------------------------------------

    def take(self, rows: np.ndarray) -> Stacks:
        """The given rows (sorted indices or a boolean mask), on the same frame table."""
        rows = np.flatnonzero(rows) if rows.dtype == bool else np.asarray(rows, dtype=np.int64)
        if len(rows) == len(self.counts):  # every row, in order: nothing to copy
            return self
        if len(rows) and int(rows[-1]) - int(rows[0]) + 1 == len(rows) and (np.diff(rows) == 1).all():
            lo, hi = int(rows[0]), int(rows[-1]) + 1  # a contiguous run (one process of a sorted input)
            a = int(self.offsets[lo])
            part = Stacks(
                self.frames, self.ids[a : int(self.offsets[hi])], self.offsets[lo : hi + 1] - a, self.counts[lo:hi]
            )
            source, first = self._parent or (self, 0)
            part._parent = (source, first + lo)  # the rows' first owner of postings, and where they start
            return part
        lengths = self.lengths[rows]
        return Stacks(
            self.frames,
            _gather_rows(self.ids, self.offsets, rows, lengths),
            np.concatenate(([0], np.cumsum(lengths))),
            self.counts[rows],
        )

    def relabel(self, labels: Sequence[str]) -> Stacks:
        """Each frame id renamed (several ids may get one label); rows that become equal are merged."""
        return self.relabel_rows(labels)[0]

    def relabel_rows(self, labels: Sequence[str]) -> tuple[Stacks, np.ndarray]:
        """``relabel``, and the new row of every old row (what a sample table follows)."""
        index: dict[str, int] = {}
        new_id = np.fromiter((index.setdefault(lab, len(index)) for lab in labels), dtype=np.int32, count=len(labels))
        # only rows holding a frame whose label another frame now has too can become equal (to each other)
        merging = np.bincount(new_id, minlength=len(index))[new_id] > 1
        maybe = np.unique(np.searchsorted(self.offsets, np.flatnonzero(merging[self.ids]), side="right") - 1)
        frames = FrameTable.of(list(index)) if isinstance(self.frames, FrameTable) else list(index)
        return merged_rows(frames, self.ids, self.offsets, self.counts, new_id.astype(id_dtype(len(index))), maybe)


def _cut_postings(source: Stacks, lo: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Postings of rows lo..lo+n of ``source`` (which has its own): its rows array, shared, and each
    frame's run of those rows in it (rows are sorted within a frame: one run each)."""
    rows, begin, end, _ = source._postings
    return rows, _first_at_least(rows, begin, end, lo), _first_at_least(rows, begin, end, lo + n), lo


def _first_at_least(rows: np.ndarray, begin: np.ndarray, end: np.ndarray, value: int) -> np.ndarray:
    """Per frame f, the first index in begin[f]..end[f] (its sorted run of ``rows``) where the row is at
    least ``value`` (end[f]: none): a binary search of every run at once, a step per halving of the
    longest run, each step as long as the frame table."""
    lo: np.ndarray = begin.copy()
    hi: np.ndarray = end.copy()
    live = np.flatnonzero(lo < hi)
    while len(live):
        mid = (lo[live] + hi[live]) // 2
        below = rows[mid] < value
        lo[live[below]] = mid[below] + 1
        hi[live[~below]] = mid[~below]
        live = live[lo[live] < hi[live]]
    return lo


def _sum_per_frame(begin: np.ndarray, end: np.ndarray, values: Callable[[int, int], np.ndarray]) -> np.ndarray:
    """Per frame f, the sum of ``values(a, b)`` (one value per posting a..b) over its postings
    begin[f]..end[f] (both non-decreasing, the runs in frame order and apart), worked a block of
    postings at a time: no array as long as all of them."""
    total = int(end[-1]) if len(end) else 0
    out = np.zeros(len(begin), dtype=np.int64)
    for a in range(int(begin[0]) if len(begin) else 0, total, _SUM_STEP):
        b = min(a + _SUM_STEP, total)
        upto = np.concatenate(([0], np.cumsum(values(a, b), dtype=np.int64)))
        first = int(np.searchsorted(end, a, side="right"))  # frames whose run reaches into a..b
        last = int(np.searchsorted(begin, b, side="left"))
        out[first:last] += upto[np.clip(end[first:last], a, b) - a] - upto[np.clip(begin[first:last], a, b) - a]
    return out


_BLOCK_OCC = 1 << 20  # frame occurrences per block for whole-profile work
_POSTING_OCC = 1 << 18  # frame occurrences per block when building postings (several temporaries each)
_SUM_STEP = 1 << 20  # postings per block when summing counts per frame


def _row_blocks(offsets: np.ndarray, size: int) -> list[tuple[int, int]]:
    """Consecutive row ranges holding about ``size`` frame occurrences each."""
    n = len(offsets) - 1
    cuts = np.searchsorted(offsets, np.arange(size, int(offsets[-1]), size)) if n else np.zeros(0, np.int64)
    bounds = sorted({0, n, *[int(c) for c in cuts if 0 < c < n]})
    return list(zip(bounds[:-1], bounds[1:]))


def _block_postings(st: Stacks, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows lo..hi's (frame, row) pairs sorted by frame then row: once per row (recursion), and a
    root label only when it is also deeper in the row."""
    a, b = int(st.offsets[lo]), int(st.offsets[hi])
    lengths = st.lengths[lo:hi]
    # ids are uint16 for a table of at most 65,536 frames: their stable sort is a radix sort, several
    # times faster than a comparison sort
    order = np.argsort(st.ids[a:b], kind="stable")
    frame = st.ids[a:b][order]
    row = np.repeat(np.arange(lo, hi, dtype=np.int32), lengths)[order]
    root = np.zeros(b - a, dtype=bool)
    root[st.offsets[lo:hi] - a] = True
    root = root[order]
    if not len(frame):
        return frame, row
    # a (frame, row) pair's occurrences are adjacent, in row order: the first is the pair's, kept
    # unless it is the root and the only one (the root label is not deeper in the row)
    first = np.empty(len(frame), dtype=bool)
    first[0] = True
    np.not_equal(row[1:], row[:-1], out=first[1:])
    first[1:] |= frame[1:] != frame[:-1]
    keep = ~root
    keep[:-1] |= ~first[1:]
    keep &= first
    return frame[keep], row[keep]


class StacksBuilder:
    """Accumulates (stack, count) pairs, interning frames; repeats of a stack are summed at build()."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.ids: list[int] = []
        self.lengths: list[int] = []
        self.counts: list[int] = []

    def add(self, stack: Sequence[str], count: int) -> None:
        index = self.index
        self.ids.extend([index.setdefault(f, len(index)) for f in stack])
        self.lengths.append(len(stack))
        self.counts.append(count)

    def build(self) -> Stacks:
        offsets = np.concatenate(([0], np.cumsum(np.asarray(self.lengths, dtype=np.int64))))
        return merged(
            list(self.index),
            np.asarray(self.ids, dtype=id_dtype(len(self.index))),
            offsets,
            np.asarray(self.counts, dtype=np.int64),
        )


def merged(frames: Sequence[str], ids: np.ndarray, offsets: np.ndarray, counts: np.ndarray) -> Stacks:
    """A Stacks with equal rows summed into one (rows compared by a 64-bit hash, then verified)."""
    return merged_rows(frames, ids, offsets, counts)[0]


def merged_rows(
    frames: Sequence[str],
    ids: np.ndarray,
    offsets: np.ndarray,
    counts: np.ndarray,
    relabel: np.ndarray | None = None,
    maybe: np.ndarray | None = None,
) -> tuple[Stacks, np.ndarray]:
    """``merged``, and the row each input row went to (groups keep the order of their first row).

    ``relabel``: the rows' frame ids are ``relabel[ids]`` (applied a block at a time: the relabelled
    rows are never held whole beside the input ones, only the merged result is). ``maybe``: the only
    rows (sorted) that can equal another one; the others are known to be distinct (None: any row)."""
    n = len(counts)
    same = np.arange(n, dtype=np.int64)
    if n < 2 or (maybe is not None and len(maybe) < 2):
        return Stacks(frames, _relabelled(ids, relabel), offsets, counts), same
    lengths = np.diff(offsets)
    first, inverse = (
        _hash_groups(ids, offsets, lengths, relabel)
        if maybe is None
        else _groups_among(ids, offsets, lengths, relabel, maybe)
    )
    if len(first) == n:
        return Stacks(frames, _relabelled(ids, relabel), offsets, counts), same
    order = np.argsort(first)  # groups in the order of their first row: sorted input stays sorted
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    first, inverse = first[order], rank[inverse]
    if _rows_equal(ids, offsets, lengths, first[inverse], relabel, maybe):
        kept_lengths = lengths[first]
        return Stacks(
            frames,
            _gather_rows(ids, offsets, first, kept_lengths, relabel),
            np.concatenate(([0], np.cumsum(kept_lengths))),
            np.bincount(inverse, weights=counts).astype(np.int64),
        ), inverse.astype(np.int64)
    # a 64-bit collision (never seen in practice): merge exactly
    exact: Counter[tuple[int, ...]] = Counter()
    ids_l, offs_l = _relabelled(ids, relabel).tolist(), offsets.tolist()
    where: dict[tuple[int, ...], int] = {}
    row_of = np.empty(n, dtype=np.int64)
    for i, c in enumerate(counts.tolist()):
        key = tuple(ids_l[offs_l[i] : offs_l[i + 1]])
        exact[key] += c
        row_of[i] = where.setdefault(key, len(where))
    new_lengths = [len(k) for k in exact]
    return Stacks(
        frames,
        np.fromiter((f for k in exact for f in k), dtype=np.int32),
        np.concatenate(([0], np.cumsum(new_lengths, dtype=np.int64))),
        np.fromiter(exact.values(), dtype=np.int64, count=len(exact)),
    ), row_of


def _relabelled(ids: np.ndarray, relabel: np.ndarray | None) -> np.ndarray:
    return ids if relabel is None else relabel[ids]


def _rows_equal(
    ids: np.ndarray,
    offsets: np.ndarray,
    lengths: np.ndarray,
    rep: np.ndarray,
    relabel: np.ndarray | None,
    rows: np.ndarray | None = None,
) -> bool:
    """Every row (of ``rows``, else all) equal to its representative row ``rep[row]``, checked a block
    of rows at a time."""
    if not (lengths == lengths[rep]).all():
        return False
    if rows is not None:
        starts = np.concatenate(([0], np.cumsum(lengths[rows])))
        for lo, hi in _row_blocks(starts, _BLOCK_OCC):
            mine = ids[gather_index(offsets[rows[lo:hi]], lengths[rows[lo:hi]])]
            theirs = ids[gather_index(offsets[rep[rows[lo:hi]]], lengths[rows[lo:hi]])]
            if not np.array_equal(_relabelled(mine, relabel), _relabelled(theirs, relabel)):
                return False
        return True
    for lo, hi in _row_blocks(offsets, _BLOCK_OCC):
        a, b = int(offsets[lo]), int(offsets[hi])
        mine = _relabelled(ids[a:b], relabel)
        theirs = _relabelled(ids[gather_index(offsets[rep[lo:hi]], lengths[lo:hi])], relabel)
        if not np.array_equal(mine, theirs):
            return False
    return True


def _gather_rows(
    ids: np.ndarray, offsets: np.ndarray, rows: np.ndarray, lengths: np.ndarray, relabel: np.ndarray | None = None
) -> np.ndarray:
    """The frame ids of the given rows (``lengths``: theirs), concatenated (relabelled), filled a block
    of rows at a time: the index of every occurrence is never made whole."""
    starts = np.concatenate(([0], np.cumsum(lengths)))
    out = np.empty(int(starts[-1]), dtype=(ids if relabel is None else relabel).dtype)
    for lo, hi in _row_blocks(starts, _BLOCK_OCC):
        part = ids[gather_index(offsets[rows[lo:hi]], lengths[lo:hi])]
        out[int(starts[lo]) : int(starts[hi])] = _relabelled(part, relabel)
    return out


def _groups_among(
    ids: np.ndarray, offsets: np.ndarray, lengths: np.ndarray, relabel: np.ndarray | None, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``_hash_groups`` when only ``rows`` (sorted) may share a group: those rows are hashed, every other
    row is a group of its own; groups come in the order of their first row."""
    mine = lengths[rows]
    first, inverse = _hash_groups(
        ids[gather_index(offsets[rows], mine)], np.concatenate(([0], np.cumsum(mine))), mine, relabel
    )
    group = np.arange(len(lengths), dtype=np.int64)
    group[rows] = rows[first[inverse]]
    starts = group == np.arange(len(lengths))
    return np.flatnonzero(starts), (np.cumsum(starts) - 1)[group]


def _hash_groups(
    ids: np.ndarray, offsets: np.ndarray, lengths: np.ndarray, relabel: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(first row of each group, group of each row) for rows grouped by a hash of their frame ids
    (``relabel[ids]`` when given)."""
    max_len = int(lengths.max()) if len(lengths) else 0
    salt = np.random.default_rng(_HASH_SEED).integers(1, 2**63, size=max_len + 1, dtype=np.uint64) | np.uint64(1)
    h = np.zeros(len(lengths), dtype=np.uint64)
    for lo, hi in _row_blocks(offsets, _BLOCK_OCC):  # temporaries the size of a block, not of the profile
        a, b = int(offsets[lo]), int(offsets[hi])
        if a == b:
            continue
        pos = np.arange(b - a, dtype=np.int32) - np.repeat((offsets[lo:hi] - a).astype(np.int32), lengths[lo:hi])
        with np.errstate(over="ignore"):
            mixed = (_relabelled(ids[a:b], relabel).astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)) * salt[pos]
            nonempty = lengths[lo:hi] > 0
            h[lo:hi][nonempty] = np.add.reduceat(mixed, (offsets[lo:hi] - a)[nonempty])
    with np.errstate(over="ignore"):
        h = h * np.uint64(0xBF58476D1CE4E5B9) + lengths.astype(np.uint64)
    _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
    return first, inverse.reshape(-1)


def gather_index(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Indices of the concatenated ranges [starts[i], starts[i] + lengths[i]) (int32 when they fit)."""
    total = int(lengths.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    small = total < 2**31 and (not len(starts) or int(starts.max()) + int(lengths.max()) < 2**31)
    kind = np.int32 if small else np.int64
    shift = np.repeat((starts - np.concatenate(([0], np.cumsum(lengths)[:-1]))).astype(kind), lengths)
    shift += np.arange(total, dtype=kind)
    return shift


def top_frames(frames: Sequence[str], values: np.ndarray, limit: int) -> list[int]:
    """The ids of the ``limit`` largest positive ``values``, in the order ``sorted(counter.items(), key=lambda
    kv: (-kv[1], kv[0]))`` gives a Counter of them (a frame table's names are distinct): found by a partition
    and, among the ties at the cut, the smallest names, so millions of frames are never listed whole."""
    hit = np.flatnonzero(values > 0)
    if len(hit) > limit > 0:
        cut = np.partition(values[hit], len(hit) - limit)[len(hit) - limit]  # the limit-th largest
        above = hit[values[hit] > cut].tolist()
        tied = heapq.nsmallest(limit - len(above), ((frames[i], i) for i in hit[values[hit] == cut].tolist()))
        hit = np.asarray(above + [i for _, i in tied], dtype=np.int64)
    elif limit <= 0:
        return []
    return sorted(hit.tolist(), key=lambda i: (-values[i], frames[i]))


def _counter(frames: Sequence[str], values: np.ndarray) -> Counter[str]:
    hit = np.flatnonzero(values > 0)
    return Counter({frames[i]: int(v) for i, v in zip(hit.tolist(), values[hit].tolist())})

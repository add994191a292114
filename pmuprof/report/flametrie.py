"""The trie of folded stacks for the flame graph, and what fits of it: budget cut, kept nodes, elided samples.

Built level by level from Stacks rows with array operations (one np.unique per depth), numbered in
preorder with children sorted by name (flamegraph.pl's order); every pass over all nodes is an
array operation, so only the kept nodes are ever visited one by one.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from functools import cached_property
from typing import Mapping, Sequence

import numpy as np

from ..model.stacks import Stack, Stacks

@dataclass(frozen=True)
class Trie:
    """Preorder nodes: frame name index, depth, parent, per-column sums, widest share, subtree end."""

    frames: tuple[str, ...]  # frame table, sorted by name
    frame: np.ndarray  # node -> frames index
    depths: np.ndarray
    parents: np.ndarray  # -1 for a root
    values: np.ndarray  # (columns, nodes) samples at or below the node
    totals: list[int]
    weight: np.ndarray  # the node's largest share over the columns
    end: np.ndarray  # last preorder index of the node's subtree
    row_node: np.ndarray | None = None  # each input row's last node (preorder; -1: an empty row)

    @classmethod
    def of(cls, columns: Sequence["Stacks | Mapping[Stack, int]"]) -> "Trie":
        cols = [Stacks.of(c) for c in columns]
        frames = tuple(sorted({f for c in cols for f in c.frames}))
        rank = {f: i for i, f in enumerate(frames)}
        totals = [st.total for st in cols]
        if len(cols) == 1:  # the common case: the rows as they are, frame ids ranked level by level
            st = cols[0]
            remap = np.fromiter((rank[f] for f in st.frames), dtype=np.int64, count=len(st.frames))
            return _build(frames, st.ids, st.lengths, st.counts, np.zeros(len(st.counts), np.int8), 1, totals, remap)
        ids, lengths, counts, col_of = [], [], [], []
        for k, st in enumerate(cols):
            remap = np.fromiter((rank[f] for f in st.frames), dtype=np.int32, count=len(st.frames))
            ids.append(remap[st.ids] if len(st.ids) else np.zeros(0, np.int32))
            lengths.append(st.lengths)
            counts.append(st.counts)
            col_of.append(np.full(len(st.counts), k, dtype=np.int8))
        return _build(frames, np.concatenate(ids), np.concatenate(lengths), np.concatenate(counts),
                      np.concatenate(col_of), len(cols), totals)

    @property
    def size(self) -> int:
        return len(self.frame)

    def own(self) -> np.ndarray:
        """Per column, each node's own (self) samples: its value less its children's."""
        own = self.values.copy()
        kids = np.flatnonzero(self.parents >= 0)
        for c in range(len(own)):
            np.subtract.at(own[c], self.parents[kids], self.values[c, kids])
        return own

    def cut(self, max_nodes: int, max_bytes: int) -> float:
        """The weight at which the budget runs out, taking nodes widest first; -1 when all fit.

        Counts what the kept nodes cost and, for each one with a child left out, the elided node
        that will hold that child's samples (a node with a child no wider than the cut).
        """
        weight, narrowest = self.weight, self.narrowest_child
        per_node = 6 + 4 * len(self.totals)  # name index, depth and one value per column, with separators
        pending: list[float] = []  # narrowest-child widths of taken nodes, not yet above the cut
        whole = 0  # taken nodes that keep all their children at this cut
        seen: set[int] = set()
        used = 0
        frame = self.frame
        for rank, i in enumerate(_chunked(self.widest_first)):
            w = weight[i]
            while pending and -pending[0] > w:
                heapq.heappop(pending)
                whole += 1
            elided = rank - whole
            if rank + elided >= max_nodes or used + elided * per_node > max_bytes:
                return float(w)
            used += per_node
            f = int(frame[i])
            if f not in seen:
                seen.add(f)
                used += len(self.frames[f].encode("utf-8")) + 5
            heapq.heappush(pending, -float(narrowest[i]))
        return -1.0

    @cached_property
    def widest_first(self) -> np.ndarray:
        """Node indices by weight, widest first (ties in preorder)."""
        return np.argsort(-self.weight, kind="stable").astype(np.int32)

    @cached_property
    def narrowest_child(self) -> np.ndarray:
        """Each node's narrowest child's weight; a leaf's own weight (it never gets an elided child)."""
        narrowest = self.weight.copy()
        kids = np.flatnonzero(self.parents >= 0)
        has_kid = np.zeros(self.size, dtype=bool)
        has_kid[self.parents[kids]] = True
        narrowest[has_kid] = np.inf
        np.minimum.at(narrowest, self.parents[kids], self.weight[kids])
        return narrowest

    def anchors(self, kept: np.ndarray) -> np.ndarray:
        """Each node's nearest kept caller-or-self (-1: none): top-down, one array step per depth."""
        anchor = np.where(kept, np.arange(self.size, dtype=np.int32), np.int32(-1))
        for nodes in self.levels[1:]:
            lost = nodes[~kept[nodes]]
            anchor[lost] = anchor[self.parents[lost]]
        return anchor

    @cached_property
    def levels(self) -> list[np.ndarray]:
        order = np.argsort(self.depths, kind="stable").astype(np.int32)
        bounds = np.searchsorted(self.depths[order], np.arange(int(self.depths.max(initial=0)) + 2))
        return [order[bounds[d]:bounds[d + 1]] for d in range(len(bounds) - 1)]


def _chunked(values: np.ndarray, size: int = 65536):
    """The array's items as Python ints, converted a chunk at a time (no list of all of them)."""
    for lo in range(0, len(values), size):
        yield from values[lo:lo + size].tolist()


def _build(frames: tuple[str, ...], ids: np.ndarray, lengths: np.ndarray, counts: np.ndarray, col_of: np.ndarray,
           width: int, totals: list[int], rank: np.ndarray | None = None) -> Trie:
    """Level-order nodes (unique (parent, frame) per depth), then renumbered in preorder. ``rank``
    maps the ids to positions in ``frames`` (None: they are positions already)."""
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    alive = np.flatnonzero(lengths > 0)
    node_of = np.zeros(len(lengths), dtype=np.int64)
    parent_l, frame_l, depth_l, self_l = [], [], [], []
    base = 0
    depth = 0
    while len(alive):
        f = ids[offsets[alive] + depth].astype(np.int64)
        if rank is not None:
            f = rank[f]
        key = f if depth == 0 else (node_of[alive] << 32) | f
        uniq, inverse = np.unique(key, return_inverse=True)
        inverse = inverse.reshape(-1)
        # node-indexed arrays in int32 (a trie of 2**31 nodes is far past any budget): half the memory
        parent_l.append(np.full(len(uniq), -1, np.int32) if depth == 0 else (uniq >> 32).astype(np.int32))
        frame_l.append((uniq & 0xFFFFFFFF if depth else uniq).astype(np.int32))
        depth_l.append(np.full(len(uniq), depth, np.int32))
        node_of[alive] = base + inverse
        ends = lengths[alive] == depth + 1
        own = np.zeros((width, len(uniq)), dtype=np.int64)
        for c in range(width):
            pick = ends & (col_of[alive] == c)
            own[c] = np.bincount(inverse[pick], weights=counts[alive][pick], minlength=len(uniq))
        self_l.append(own)
        base += len(uniq)
        alive = alive[~ends]
        depth += 1
    if not parent_l:
        empty = np.zeros(0, np.int64)
        return Trie(frames, empty, empty, empty, np.zeros((width, 0), np.int64), totals, np.zeros(0), empty)
    parent = np.concatenate(parent_l)
    level_start = np.cumsum([0] + [len(p) for p in parent_l])
    del parent_l
    values = np.concatenate(self_l, axis=1)
    del self_l
    size = np.ones(len(parent), dtype=np.int32)
    for d in range(len(level_start) - 2, 0, -1):  # bottom-up sums: subtree sizes and values
        nodes = np.arange(level_start[d], level_start[d + 1])
        np.add.at(size, parent[nodes], size[nodes])
        for c in range(width):
            np.add.at(values[c], parent[nodes], values[c, nodes])
    pre = _preorder(parent, size, level_start)
    perm = np.empty_like(pre)
    perm[pre] = np.arange(len(pre), dtype=np.int32)  # preorder index -> level-order node
    parent = parent[perm]
    new_parent = np.where(parent >= 0, pre[np.maximum(parent, 0)], -1).astype(np.int32)
    row_node = np.where(lengths > 0, pre[node_of], -1)
    del parent, pre
    values = values[:, perm]
    cols = [values[c] / t if t else np.zeros(values.shape[1]) for c, t in enumerate(totals)]
    weight = cols[0] if width == 1 else np.max(np.vstack(cols), axis=0)
    end = size[perm]
    end += np.arange(len(perm), dtype=np.int32) - 1
    return Trie(frames, np.concatenate(frame_l)[perm], np.concatenate(depth_l)[perm], new_parent, values, totals,
                weight, end, row_node)


def _preorder(parent: np.ndarray, size: np.ndarray, level_start: np.ndarray) -> np.ndarray:
    """Preorder index of every level-order node; a level's nodes are sorted by (parent, name)."""
    pre = np.zeros(len(parent), dtype=np.int32)
    for d in range(len(level_start) - 1):
        nodes = np.arange(level_start[d], level_start[d + 1])
        before = np.cumsum(size[nodes]) - size[nodes]  # sizes of the earlier nodes of the level
        if d == 0:
            pre[nodes] = before
            continue
        par = parent[nodes]
        first = np.concatenate(([True], par[1:] != par[:-1]))
        group_start = np.maximum.accumulate(np.where(first, np.arange(len(nodes)), 0))
        pre[nodes] = pre[par] + 1 + before - before[group_start]
    return pre

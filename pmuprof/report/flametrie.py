"""The trie of folded stacks for the flame graph, and what fits of it: budget cut, kept nodes, elided samples.

Its nodes are numbered in preorder with children sorted by name, built by flamebuild. Every pass over
all nodes is an array operation, so only the kept nodes are ever visited one by one.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from ..model.stacks import Stack, Stacks
from .flamebuild import NODE_BLOCK, nodes_of

_OWN_BLOCK = 1 << 18  # nodes per block where each holds several int64 temporaries


@dataclass(frozen=True)
class Trie:
    """Preorder nodes: frame name index, depth, parent, per-column sums, subtree end (each node's
    widest share, ``weight``, is made when asked for)."""

    frames: Sequence[str]  # frame table, sorted by name
    frame: np.ndarray  # node -> frames index (uint16 up to 65,536 frames: widen before arithmetic)
    depths: np.ndarray  # (uint16 up to 65,536 levels, likewise)
    parents: np.ndarray  # -1 for a root
    values: np.ndarray  # (columns, nodes) samples at or below the node
    totals: list[int]
    end: np.ndarray  # last preorder index of the node's subtree
    row_node: np.ndarray | None = None  # each input row's last node (preorder; -1: an empty row)

    @classmethod
    def of(cls, columns: Sequence[Stacks | Mapping[Stack, int]]) -> Trie:
        """The trie of the columns' stacks (flamebuild: names ranked together, rows read in preorder)."""
        return cls(*nodes_of(columns))

    @property
    def weight(self) -> np.ndarray:
        """Each node's largest share over the columns (made on each use, not kept: the trie outlives
        the cut that needs it, and it is as large as the values)."""
        return _weight(self.values, self.totals)

    @property
    def size(self) -> int:
        return len(self.frame)

    def own(self) -> np.ndarray:
        """Per column, each node's own (self) samples: its value less its children's."""
        own: np.ndarray = self.values.copy()
        for lo, parents, kids in self._child_blocks():
            for c in range(len(own)):
                np.subtract.at(own[c], parents, self.values[c, lo : lo + len(kids)][kids])
        return own

    def own_at(self) -> tuple[np.ndarray, np.ndarray]:
        """(nodes, their own samples per column): ``own()`` where it can be nonzero, the nodes where input rows
        end (all nodes for a trie without them), sorted; arrays as long as the rows, not the trie."""
        if self.row_node is None:
            return np.arange(self.size, dtype=np.int64), self.own()
        nodes = np.unique(self.row_node[self.row_node >= 0]).astype(np.int64)
        own = self.values[:, nodes].astype(np.int64)
        if not len(nodes):
            return nodes, own
        for lo, parents, kids in self._child_blocks(_OWN_BLOCK):  # less each such node's children, by block
            at = np.minimum(np.searchsorted(nodes, parents), len(nodes) - 1)
            hit = nodes[at] == parents
            for c in range(len(own)):
                np.subtract.at(own[c], at[hit], self.values[c, lo : lo + len(kids)][kids][hit])
        return nodes, own

    def _child_blocks(self, block: int | None = None) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """(first node, parents of the non-root nodes, which nodes those are) a block of nodes at a
        time (NODE_BLOCK unless told, read when called): per-child work whose temporaries stay the size
        of a block, not of the trie."""
        block = NODE_BLOCK if block is None else block
        for lo in range(0, self.size, block):
            parents = self.parents[lo : lo + block]
            kids = parents >= 0
            yield lo, parents[kids], kids

    def cut(self, max_nodes: int, max_bytes: int) -> float:
        """The weight at which the budget runs out, taking nodes widest first; -1 when all fit.

        Counts what the kept nodes cost and, for each one with a child left out, the elided node
        that will hold that child's samples (a node with a child no wider than the cut).

        Worked as arrays over the widest max_nodes + 1 nodes in their order (the budget is gone by
        then): a taken node keeps all its children at a weight below its narrowest child's, so the
        elided nodes at rank r are the taken nodes (ranks below r) whose narrowest child is not
        wider than the r-th weight; names cost once, at their first taken node. A heap walked in
        Python took 0.25 s on the reference's 634,108-node trie.
        """
        key, divisor = self._width_key()
        order = self.widest_first(key, max_nodes + 1)[: max_nodes + 1]  # the cut is made by then
        if not len(order):
            return -1.0
        weights = key[order].astype(np.float64) / divisor  # the node's weight, as _weight computes it
        narrowest = self.narrowest_child(key)[order].astype(np.float64) / divisor
        ranks = np.arange(len(order), dtype=np.int64)
        # node j keeps all its children from the first rank whose weight is below its narrowest
        # child's (weights never grow along the order), and only once it is taken (rank > j)
        whole_from = np.maximum(np.searchsorted(-weights, -narrowest, side="right"), ranks + 1)
        whole = np.cumsum(np.bincount(whole_from, minlength=len(order) + 1))[: len(order)]
        elided = ranks - whole
        per_node = 6 + 4 * len(self.totals)  # name index, depth and one value per column, with separators
        frame = self.frame[order]
        names, first = np.unique(frame, return_index=True)
        name_cost = np.zeros(len(order), dtype=np.int64)
        name_cost[first] = [len(self.frames[f].encode("utf-8")) + 5 for f in names.tolist()]
        used = ranks * per_node + np.cumsum(name_cost) - name_cost  # what the nodes before it cost
        over = np.flatnonzero((ranks + elided >= max_nodes) | (used + elided * per_node > max_bytes))
        return float(weights[over[0]]) if len(over) else -1.0

    def _width_key(self, weight: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        """What orders nodes by weight, and what turns it into a weight: a single column's values with
        its total (value / total is the weight, in the same order, with the same minima, in half the
        memory), else the weights themselves with 1."""
        if len(self.totals) == 1 and 0 < self.totals[0] < 2**53:
            return self.values[0], float(self.totals[0])
        return (self.weight if weight is None else weight), 1.0

    def widest_first(self, key: np.ndarray | None = None, limit: int | None = None) -> np.ndarray:
        """Node indices by weight, widest first (ties in preorder); with ``limit``, at least the first
        ``limit`` of that order (the nodes at least as wide as the limit-th widest, ordered). Not kept:
        the trie outlives its cut."""
        key = self._width_key()[0] if key is None else key
        if limit is None or limit >= len(key):
            return np.argsort(-key, kind="stable").astype(np.int32)
        at_least = np.partition(key, len(key) - limit)[len(key) - limit]  # the limit-th widest
        candidates = np.flatnonzero(key >= at_least).astype(np.int32)  # in preorder: ties stay so
        return candidates[np.argsort(-key[candidates], kind="stable")]

    def wider_than(self, threshold: float) -> np.ndarray:
        """Whether each node's weight is above ``threshold``, worked a block of nodes at a time (no
        array of all the weights)."""
        out = np.empty(self.size, dtype=bool)
        for lo in range(0, self.size, NODE_BLOCK):
            out[lo : lo + NODE_BLOCK] = _weight(self.values[:, lo : lo + NODE_BLOCK], self.totals) > threshold
        return out

    def narrowest_child(self, key: np.ndarray | None = None) -> np.ndarray:
        """Each node's narrowest child's ``key`` (weight, or value for one column); a leaf's own (it
        never gets an elided child)."""
        key = self._width_key()[0] if key is None else key
        narrowest: np.ndarray = key.copy()
        top = np.iinfo(key.dtype).max if key.dtype.kind in "iu" else np.inf
        for _, parents, _ in self._child_blocks():
            narrowest[parents] = top
        for lo, parents, kids in self._child_blocks():
            np.minimum.at(narrowest, parents, key[lo : lo + len(kids)][kids])
        return narrowest

    def anchors(self, kept: np.ndarray, nodes: np.ndarray | None = None) -> np.ndarray:
        """Each node's (each of ``nodes``') nearest kept caller-or-self (-1: none).

        When every kept node's caller is kept (what a cut by width gives: a caller is at least as wide
        as its callees), the left-out nodes are whole subtrees, each a run of the preorder from its top
        node, and the top's parent is the anchor of the run: a search among the tops. Else by pointer
        jumping over every node."""
        closed = all(bool((~kept[lo:hi] | kept[caller] | root).all()) for lo, hi, caller, root in self._callers())
        if not closed:
            every = self._anchors_by_jumping(kept)
            return every if nodes is None else every[nodes]
        tops = np.concatenate(  # the top node of each left-out subtree, in preorder
            [np.flatnonzero(~kept[lo:hi] & (root | kept[caller])) + lo for lo, hi, caller, root in self._callers()]
            or [np.zeros(0, np.int64)]
        )
        at = np.arange(self.size, dtype=np.int64) if nodes is None else np.asarray(nodes, dtype=np.int64)
        anchor = at.astype(np.int32)
        out = ~kept[at]
        if len(tops) and out.any():  # a left-out node is in the subtree of the last top before it
            anchor[out] = self.parents[tops[np.searchsorted(tops, at[out], side="right") - 1]]
        return anchor

    def _callers(self) -> Iterator[tuple[int, int, np.ndarray, np.ndarray]]:
        """(first node, one past the last, their callers (0 for a root), which are roots) a block of nodes
        at a time."""
        for lo in range(0, self.size, NODE_BLOCK):
            parents = self.parents[lo : lo + NODE_BLOCK]
            yield lo, lo + len(parents), np.maximum(parents, 0), parents < 0

    def _anchors_by_jumping(self, kept: np.ndarray) -> np.ndarray:
        """``anchors`` for any ``kept``: every node points at itself when kept, else at its parent, and a
        pointer at a left-out node takes that node's pointer, so the distance covered doubles each
        round (a few rounds, int32 arrays only)."""
        anchor = np.where(kept, np.arange(self.size, dtype=np.int32), self.parents)
        while True:
            up = np.maximum(anchor, 0)
            jump = anchor >= 0
            jump &= ~kept[up]
            if not jump.any():
                return anchor
            np.copyto(anchor, anchor[up], where=jump)


def _weight(values: np.ndarray, totals: list[int]) -> np.ndarray:
    """Each node's largest share over the columns."""
    if len(totals) == 1:
        return values[0] / totals[0] if totals[0] else np.zeros(values.shape[1])
    cols = [values[c] / t if t else np.zeros(values.shape[1]) for c, t in enumerate(totals)]
    widest: np.ndarray = np.max(np.vstack(cols), axis=0)
    return widest

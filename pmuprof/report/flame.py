"""Compact flame-graph trees: preorder parallel arrays (name index, depth, value) over a string table."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

import numpy as np

from ..model.labels import is_kernel, is_unnamed
from ..model.stacks import Stack
from .flametrie import Trie
from .rows import ElidedSelf, FlameTree

# Kinds drive the colours in the report: what the frame is, not how hot it is.
KIND_USER, KIND_KERNEL, KIND_UNNAMED, KIND_PROCESS, KIND_ELIDED = 0, 1, 2, 3, 4
ELIDED_NAME = "[elided frames]"
_ELIDED_KEY = "\0elided\0"
_HEX_ADDR = re.compile(r"^(0x)?[0-9a-fA-F]{6,}$")
DEFAULT_MAX_NODES = 200_000
DEFAULT_MAX_BYTES = 2_500_000  # the tree's JSON; the rest of a report is rarely over 400 kB
# leaf frames listed by name in elided_self; past it the lightest are summed under the elided frame's name (a
# profile of 2 M distinct leaf functions listed them all: a 42 MB report, never within max_bytes)
MAX_HIDDEN_LEAVES = 20_000


def frame_kind(name: str, depth: int) -> int:
    """User, kernel (``_[k]``), unnamed (``[unknown]``, ``[dso]``, bare address) or process root."""
    if depth == 0:
        return KIND_PROCESS
    if is_kernel(name):
        return KIND_KERNEL
    if is_unnamed(name) or _HEX_ADDR.match(name):
        return KIND_UNNAMED
    return KIND_USER


def _tree(
    trie: Trie, threshold: float, own: tuple[np.ndarray, np.ndarray], at: np.ndarray
) -> tuple[FlameTree, np.ndarray]:
    """The payload tree keeping the nodes wider than ``threshold`` (-1: all of them).

    Kept nodes come in preorder; after each kept node's subtree, an elided child holding its
    left-out descendants' own samples, with their leaf frames below it (by name). A leaf frame is
    shown there when it is at least ``min_leaf`` samples in some column; smaller ones stay in the
    elided node's own samples and are listed in ``elided_self`` by frame, with ``nested``: the part
    whose kept callers include the same function (a recursive call, which a sandwich counts once); up to
    MAX_HIDDEN_LEAVES frames, the lightest beyond it summed under the elided frame's name.
    Also returns the output row of each trie node ``at``: its own, or for a left-out node its kept caller's
    elided node (what a subset of the samples, e.g. some seconds, adds its own samples to).
    """
    totals, width, n = trie.totals, len(trie.totals), trie.size
    kept = trie.wider_than(threshold) if threshold >= 0 else np.ones(n, dtype=bool)
    keep = np.flatnonzero(kept)
    g = _Groups.of(trie, own, kept, [int(threshold * t) + 1 for t in totals]) if len(keep) < n else _Groups.none(width)
    # every output row: (position, kind, -anchor depth, order in group) sorts them into emission order
    pos = np.concatenate((keep, g.elided_pos, g.leaf_pos[g.shown]))
    kind = np.concatenate((np.zeros(len(keep), np.int64), np.ones(len(g.elided_pos) + int(g.shown.sum()), np.int64)))
    deep = np.concatenate((np.zeros(len(keep), np.int64), -g.anchor_depth, -g.leaf_anchor_depth[g.shown]))
    sub = np.concatenate((np.zeros(len(keep) + len(g.elided_pos), np.int64), 1 + g.leaf_rank[g.shown]))
    code = np.concatenate(
        (
            trie.frame[keep].astype(np.int64) * 2 + (trie.depths[keep] == 0),
            np.full(len(g.elided_pos), -1),
            g.leaf_code[g.shown],
        )
    )
    depth = np.concatenate((trie.depths[keep].astype(np.int64), g.anchor_depth + 1, g.leaf_anchor_depth[g.shown] + 2))
    values = np.concatenate((trie.values[:, keep], g.mass, g.leaf_sum[:, g.shown]), axis=1)
    order = np.lexsort((sub, deep, kind, pos))
    code, depth, values = code[order], depth[order], values[:, order]
    hidden_code, hidden_sum, hidden_nested = g.hidden()
    strings, kinds, index = _string_table(trie, code, hidden_code)
    tree = FlameTree(
        names=strings,
        kinds=kinds,
        name=[index[c] for c in code.tolist()],
        depth=depth.tolist(),
        values=values.tolist(),
        totals=totals,
        pruned=n - len(keep),
        min_share=max(threshold, 0.0),
        elided=g.mass.sum(axis=1).tolist(),
        elided_leafless=hidden_sum.sum(axis=1).tolist(),
        elided_self=ElidedSelf(
            name=[index[c] for c in hidden_code.tolist()], values=hidden_sum.tolist(), nested=hidden_nested.tolist()
        ),
    )
    return tree, _node_rows(trie, kept, g, order, at)


def _node_rows(trie: Trie, kept: np.ndarray, g: _Groups, order: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Output row of each trie node ``at``: a kept node's own; a left-out one's nearest kept caller's elided
    node (worked a block of ``at`` at a time: arrays as long as a block and the output, not the trie)."""
    keep = np.flatnonzero(kept)
    out_row = np.empty(len(order), dtype=np.int32)
    out_row[order] = np.arange(len(order), dtype=np.int32)
    rows = np.full(len(at), -1, dtype=np.int32)
    for lo in range(0, len(at), _ROW_BLOCK):
        mine = at[lo : lo + _ROW_BLOCK]
        part = rows[lo : lo + len(mine)]
        if g.node_anchor is not None and len(g.anchors):  # anchors: sorted, one elided row each (-1: none kept)
            where = np.minimum(np.searchsorted(g.own_nodes, mine), len(g.own_nodes) - 1)  # rows end at own nodes
            anchor = np.where(g.own_nodes[where] == mine, g.node_anchor[where], -2)  # -2: no row ends there
            i = np.minimum(np.searchsorted(g.anchors, anchor), len(g.anchors) - 1)
            hit = g.anchors[i] == anchor
            part[hit] = out_row[len(keep) + i[hit]]
        shown = kept[mine]
        part[shown] = out_row[np.searchsorted(keep, mine[shown])]
    return rows


_ROW_BLOCK = 1 << 18  # input rows looked up at once


def _string_table(trie: Trie, code: np.ndarray, hidden_code: np.ndarray) -> tuple[list[str], list[int], dict[int, int]]:
    """Names in order of first use (rows, then elided_self); a code is frame * 2 + is_root, -1 the elided frame."""
    both = np.concatenate((code, hidden_code))
    uniq, first = np.unique(both, return_index=True)
    strings: list[str] = []
    kinds: list[int] = []
    index: dict[int, int] = {}
    for c in uniq[np.argsort(first)].tolist():
        index[c] = len(strings)
        if c < 0:
            strings.append(ELIDED_NAME)
            kinds.append(KIND_ELIDED)
        else:
            name = trie.frames[c >> 1]
            strings.append(name)
            kinds.append(frame_kind(name, 0 if c & 1 else 1))
    return strings, kinds, index


class _Groups:
    """Left-out nodes' own samples grouped by (nearest kept caller, leaf frame), as arrays."""

    trie: Trie | None  # None: nothing left out
    own_nodes: np.ndarray  # the nodes where input rows end (own samples), sorted
    node_anchor: np.ndarray | None  # per own node, its nearest kept caller-or-self (None: all kept)
    anchors: np.ndarray  # per group of leaves, its anchor (kept caller; -1: none)
    anchor_depth: np.ndarray
    elided_pos: np.ndarray  # where each anchor's elided node goes in preorder
    mass: np.ndarray  # (columns, anchors): samples under each elided node
    leaf_anchor: np.ndarray  # per (anchor, leaf frame) row
    leaf_code: np.ndarray  # frame * 2 + is_root
    leaf_sum: np.ndarray  # (columns, rows)
    leaf_rank: np.ndarray  # its order among its anchor's leaves
    leaf_pos: np.ndarray
    leaf_anchor_depth: np.ndarray
    shown: np.ndarray  # bool per row: wide enough to be drawn

    @classmethod
    def none(cls, width: int) -> _Groups:
        g = cls()
        z = np.zeros(0, np.int64)
        g.elided_pos = g.anchor_depth = g.leaf_pos = g.leaf_anchor_depth = g.leaf_rank = g.leaf_code = z
        g.leaf_anchor = g.anchors = z
        g.mass = g.leaf_sum = np.zeros((width, 0), np.int64)
        g.shown = np.zeros(0, dtype=bool)
        g.trie = g.node_anchor = None
        g.own_nodes = z
        return g

    @classmethod
    def of(cls, trie: Trie, own: tuple[np.ndarray, np.ndarray], kept: np.ndarray, min_leaf: list[int]) -> _Groups:
        """``own``: Trie.own_at(), the nodes where rows end and their own samples."""
        g = cls()
        g.trie = trie
        nodes, own_values = own
        g.own_nodes = nodes
        at_anchor = g.node_anchor = trie.anchors(kept, nodes)  # each own node's nearest kept caller-or-self
        pick = ~kept[nodes] & (own_values != 0).any(axis=0)
        out = nodes[pick].astype(np.int32)
        own_out = own_values[:, pick]
        code = trie.frame[out].astype(np.int64) * 2 + (trie.depths[out] == 0)
        # one group row per (anchor, leaf frame); within an anchor, by name (a root label first)
        key = np.lexsort(((code & 1) == 0, code >> 1, at_anchor[pick]))
        a, c = at_anchor[pick][key], code[key]
        first = (
            np.concatenate((np.ones(1, bool), (a[1:] != a[:-1]) | (c[1:] != c[:-1]))) if len(key) else np.zeros(0, bool)
        )
        g.leaf_anchor, g.leaf_code = a[first], c[first]
        del a, c, code
        # each group's samples: its rows are consecutive in ``key`` order (sums of counts, exact in int64)
        g.leaf_sum = (
            np.add.reduceat(own_out[:, key].astype(np.int64), np.flatnonzero(first), axis=1)
            if len(key)
            else np.zeros((len(own_out), 0), np.int64)
        )
        del key, first, own_out
        starts = (
            np.flatnonzero(np.concatenate(([True], g.leaf_anchor[1:] != g.leaf_anchor[:-1])))
            if len(g.leaf_anchor)
            else np.zeros(0, np.int64)
        )
        g.leaf_rank = np.arange(len(g.leaf_anchor)) - np.repeat(starts, np.diff(np.append(starts, len(g.leaf_anchor))))
        g.shown = np.asarray((g.leaf_sum >= np.asarray(min_leaf)[:, None]).any(axis=0))
        anchors = g.anchors = g.leaf_anchor[starts]
        g.mass = (
            np.add.reduceat(g.leaf_sum, starts, axis=1) if len(starts) else np.zeros((len(g.leaf_sum), 0), np.int64)
        )
        g.anchor_depth = np.where(anchors >= 0, trie.depths[np.maximum(anchors, 0)].astype(np.int64), -1)
        g.elided_pos = np.where(anchors >= 0, trie.end[np.maximum(anchors, 0)], trie.size)
        g.leaf_pos = np.repeat(g.elided_pos, np.diff(np.append(starts, len(g.leaf_anchor))))
        g.leaf_anchor_depth = np.repeat(g.anchor_depth, np.diff(np.append(starts, len(g.leaf_anchor))))
        return g

    def hidden(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Leaf frames too narrow to show, summed by frame (by name), and their nested part; past
        MAX_HIDDEN_LEAVES frames, the heaviest but one and the rest summed under the elided frame (code -1)."""
        limit = MAX_HIDDEN_LEAVES
        width = len(self.leaf_sum)
        if self.trie is None or self.shown.all():
            return np.zeros(0, np.int64), np.zeros((width, 0), np.int64), np.zeros((width, 0), np.int64)
        rows = np.flatnonzero(~self.shown)
        code, anchor = self.leaf_code[rows], self.leaf_anchor[rows]
        nested = _on_path(self.trie, anchor, code)
        by_code, inv = np.unique(code, return_inverse=True)
        inv = inv.reshape(-1)
        sums = np.stack(
            [np.bincount(inv, weights=self.leaf_sum[k, rows], minlength=len(by_code)) for k in range(width)]
        )
        nest = np.stack(
            [
                np.bincount(inv, weights=np.where(nested, self.leaf_sum[k, rows], 0), minlength=len(by_code))
                for k in range(width)
            ]
        )
        rank = np.lexsort(((by_code & 1) == 0, by_code >> 1))  # by name, a root label first
        by_code, sums, nest = by_code[rank], sums[:, rank].astype(np.int64), nest[:, rank].astype(np.int64)
        if len(by_code) <= limit:
            return by_code, sums, nest
        heavy = np.zeros(len(by_code), dtype=bool)
        heavy[np.argsort(-sums.sum(axis=0), kind="stable")[: limit - 1]] = True  # ties: the first by name
        rest = ~heavy
        return (
            np.append(by_code[heavy], -1),
            np.column_stack((sums[:, heavy], sums[:, rest].sum(axis=1))),
            np.column_stack((nest[:, heavy], np.zeros(len(nest), np.int64))),  # the elided frame calls nothing
        )


def _on_path(trie: Trie, anchor: np.ndarray, code: np.ndarray) -> np.ndarray:
    """Whether each (anchor, frame) pair's frame is the anchor or one of its callers."""
    hit = np.zeros(len(anchor), dtype=bool)
    cur = anchor.copy()
    live = np.flatnonzero(cur >= 0)
    while len(live):
        node = cur[live]
        hit[live] |= (trie.frame[node].astype(np.int64) * 2 + (trie.depths[node] == 0)) == code[live]
        cur[live] = trie.parents[node]
        live = live[cur[live] >= 0]
    return hit


def _fits(tree: FlameTree, max_nodes: int, max_bytes: int) -> tuple[bool, int]:
    size = len(json.dumps(tree, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    return len(tree["name"]) <= max_nodes and size <= max_bytes, size


def build_tree(
    columns: Sequence[Mapping[Stack, int]],
    max_nodes: int = DEFAULT_MAX_NODES,
    max_bytes: int = DEFAULT_MAX_BYTES,
    trie: Trie | None = None,
) -> FlameTree:
    """One tree over several stack maps (one value column each, e.g. before/after).

    Children are ordered by name (like flamegraph.pl), so the same input gives the same arrays.
    When the tree is over ``max_nodes`` nodes or ``max_bytes`` of JSON, the narrowest subtrees are
    left out (``pruned`` nodes, each at or below ``min_share`` of the samples). Their samples are
    not lost: under their nearest kept caller, an ``[elided frames]`` node (kind ``KIND_ELIDED``)
    holds them, with their leaf frames below it, so self time per function stays right when the
    stacks are merged by leaf. ``elided`` and ``elided_leafless`` count, per column, the samples
    shown that way and those whose leaf frame was too narrow to show as well; the latter are
    listed by leaf frame in ``elided_self`` (string-table indices, one value column each, and
    ``nested``: the part whose kept callers include the same function), so every function's self
    samples are in the payload even then (up to MAX_HIDDEN_LEAVES such functions: the lightest beyond it are
    summed under the ``[elided frames]`` name, so the total stays right). ``trie``: ``Trie.of(columns)`` when the caller has it already.
    """
    return build_tree_rows(columns, max_nodes, max_bytes, trie)[0]


def build_tree_rows(
    columns: Sequence[Mapping[Stack, int]],
    max_nodes: int = DEFAULT_MAX_NODES,
    max_bytes: int = DEFAULT_MAX_BYTES,
    trie: Trie | None = None,
) -> tuple[FlameTree, np.ndarray]:
    """``build_tree``, and for each row of the first column's Stacks the tree row its samples end
    in (-1: an empty row): what a subset of the samples (some seconds, some threads) is drawn with."""
    trie = trie if trie is not None else Trie.of(columns)
    found: tuple[FlameTree, np.ndarray] | None = None
    one = len(columns) == 1 and trie.row_node is not None  # rows of a multi-column tree are not kept
    at = np.maximum(trie.row_node, 0) if one and trie.row_node is not None else np.zeros(0, np.int32)
    if trie.size <= max_nodes:
        found = _tree(trie, -1.0, (np.zeros(0, np.int64), np.zeros((len(columns), 0), np.int64)), at)
        if _fits(found[0], max_nodes, max_bytes)[0]:
            return found[0], _rows_of(trie, found[1], one)
    own = trie.own_at()
    node_budget, byte_budget = max_nodes * 9 // 10, max_bytes * 9 // 10  # room for the leaves under elided nodes
    for _ in range(8):
        found = None  # the try that did not fit is not kept while the next is made
        found = _tree(trie, trie.cut(node_budget, byte_budget), own, at)
        fits, size = _fits(found[0], max_nodes, max_bytes)
        if fits:
            break
        node_budget = int(node_budget * min(0.9, max_nodes / len(found[0]["name"])))
        byte_budget = int(byte_budget * min(0.9, max_bytes / size))
    assert found is not None
    return found[0], _rows_of(trie, found[1], one)


def _rows_of(trie: Trie, rows: np.ndarray, one: bool) -> np.ndarray:
    """Tree row per input row of the first column, from its end node's (``rows``; -1: an empty row). Rows of
    a multi-column tree are not kept: empty."""
    if not one or trie.row_node is None:
        return np.zeros(0, dtype=np.int64)
    return np.where(trie.row_node >= 0, rows, -1).astype(np.int64)

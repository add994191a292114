"""Building the flame trie's nodes from folded stacks: names ranked, rows read into preorder arrays.

Numbered in preorder with children sorted by name (flamegraph.pl's order). Rows already sorted by
name (a folded file, the native reader's output) are read in one pass: each row adds the nodes past
the prefix it shares with the row before. Other inputs are built level by level (one np.unique per
depth) and renumbered. Every pass over all nodes is an array operation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from ..model.frametable import FrameTable, Permuted
from ..model.stacks import Stack, Stacks

NODE_BLOCK = 1 << 20  # nodes per block for work over every node


class Nodes(NamedTuple):
    """What a Trie is made of, field for field (flametrie.Trie has their meaning)."""

    frames: Sequence[str]
    frame: np.ndarray
    depths: np.ndarray
    parents: np.ndarray
    values: np.ndarray
    totals: list[int]
    end: np.ndarray
    row_node: np.ndarray | None = None


def nodes_of(columns: Sequence[Stacks | Mapping[Stack, int]]) -> Nodes:
    """The preorder nodes of the columns' stacks, their names ranked together."""
    cols = [Stacks.of(c) for c in columns]
    frames, remaps = _ranked([c.frames for c in cols])
    totals = [st.total for st in cols]
    if len(cols) == 1:  # the common case: the rows as they are, frame ids ranked level by level
        st, remap = cols[0], remaps[0]
        shared = _shared_prefixes(st, remap)
        if shared is not None:
            return _build_sorted(frames, st, remap, shared, totals)
        return _build(frames, st.ids, st.lengths, st.counts, np.zeros(len(st.counts), np.int8), 1, totals, remap)
    ids, lengths, counts, col_of = [], [], [], []
    for k, st in enumerate(cols):
        remap = remaps[k].astype(np.int32)
        ids.append(remap[st.ids] if len(st.ids) else np.zeros(0, np.int32))
        lengths.append(st.lengths)
        counts.append(st.counts)
        col_of.append(np.full(len(st.counts), k, dtype=np.int8))
    return _build(
        frames,
        np.concatenate(ids),
        np.concatenate(lengths),
        np.concatenate(counts),
        np.concatenate(col_of),
        len(cols),
        totals,
    )


def _ranked(tables: Sequence[Sequence[str]]) -> tuple[Sequence[str], list[np.ndarray]]:
    """The tables' distinct names, sorted, and per table each frame id's rank among them: what
    ``sorted(set(names))`` and a name → rank dict give, by a stable argsort of the names (a dict of 2 M
    names took 119 MiB); one FrameTable's by its own order, its names never all made at once."""
    if len(tables) == 1 and isinstance(tables[0], FrameTable):
        return _ranked_table(tables[0])
    names = np.empty(sum(len(t) for t in tables), dtype=object)
    at = 0
    for table in tables:
        names[at : at + len(table)] = list(table) if not isinstance(table, list) else table
        at += len(table)
    order = np.argsort(names, kind="stable")
    ordered = names[order]
    del names
    new = np.ones(len(ordered), dtype=bool)
    new[1:] = ordered[1:] != ordered[:-1]
    rank = np.empty(len(ordered), dtype=np.int64)
    rank[order] = np.cumsum(new) - 1
    frames = tuple(ordered[new].tolist())
    del ordered, order
    starts = np.cumsum([0] + [len(t) for t in tables])
    return frames, [rank[a:b] for a, b in zip(starts[:-1].tolist(), starts[1:].tolist())]


def _ranked_table(table: FrameTable) -> tuple[Sequence[str], list[np.ndarray]]:
    order = table.order
    new = np.ones(len(order), dtype=bool)
    prev = None
    for lo in range(0, len(order), 1 << 16):  # equal names are neighbours in the order: one rank
        for k, i in enumerate(order[lo : lo + (1 << 16)].tolist(), lo):
            name = table[i]
            new[k] = name != prev
            prev = name
    if len(new):
        new[0] = True
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.cumsum(new) - 1
    return Permuted(table, order[new]), [rank]


def _shared_prefixes(st: Stacks, rank: np.ndarray) -> np.ndarray | None:
    """Per row, how many leading frames it shares with the row before (0 for the first); None unless
    the rows are in strictly increasing order of their frames' ``rank`` (no empty row, no row that is
    a prefix of the one before). Worked a block of rows at a time, comparing each frame occurrence
    with the one at its depth in the row before."""
    n, lengths, offsets, ids = len(st.counts), st.lengths, st.offsets, st.ids
    if not n or not (lengths > 0).all():
        return None
    shared = np.zeros(n, dtype=np.int64)
    for lo, hi in st.blocks():
        lo = max(lo, 1)
        if lo >= hi:
            continue
        a, b = int(offsets[lo]), int(offsets[hi])
        mine = lengths[lo:hi]
        starts = (offsets[lo:hi] - a).astype(np.int32)
        depth = np.arange(b - a, dtype=np.int32) - np.repeat(starts, mine)
        before = np.repeat(lengths[lo - 1 : hi - 1].astype(np.int32), mine)  # the row before's length
        here = np.arange(a, b, dtype=np.int64)
        same = (depth < before) & (ids[a:b] == ids[here - before])  # ids[here - before]: its frame at this depth
        first_diff = np.minimum.reduceat(np.where(same, np.iinfo(np.int32).max, depth), starts)
        shared[lo:hi] = np.minimum(first_diff, mine)
    if n > 1:
        at = shared[1:]
        if (at >= lengths[1:]).any():  # a row equal to, or a prefix of, the row before
            return None
        prefix = at == lengths[:-1]  # the row before is a prefix of this one: in order
        mine = rank[ids[offsets[1:-1] + at].astype(np.int64)]  # where they differ: must be a larger rank
        theirs = rank[ids[np.minimum(offsets[:-2] + at, offsets[1:-1] - 1)].astype(np.int64)]
        if not (prefix | (mine > theirs)).all():
            return None
    return shared


def _build_sorted(frames: Sequence[str], st: Stacks, rank: np.ndarray, shared: np.ndarray, totals: list[int]) -> Nodes:
    """The trie of rows sorted by name (``shared``: _shared_prefixes), in preorder as it is read: row i's
    frames past its shared prefix are new nodes, numbered in turn, each the child of the one before
    except the first, whose parent is the last node before it one level up. A subtree ends before the
    next node at its depth or its parent's end; a node's value is the rows' samples ending in it."""
    lengths, offsets, counts = st.lengths, st.offsets, st.counts
    fresh = lengths - shared
    start = np.concatenate(([0], np.cumsum(fresh)))  # row i's first new node
    size = int(start[-1])
    frame: np.ndarray = np.empty(size, dtype=small_ids(len(frames)))
    depths: np.ndarray = np.empty(size, dtype=small_ids(int(lengths.max()) if len(lengths) else 0))
    for lo, hi in st.blocks():
        a, b = int(offsets[lo]), int(offsets[hi])
        mine = lengths[lo:hi]
        depth = np.arange(b - a, dtype=np.int32) - np.repeat((offsets[lo:hi] - a).astype(np.int32), mine)
        new = depth >= np.repeat(shared[lo:hi].astype(np.int32), mine)
        frame[start[lo] : start[hi]] = rank[st.ids[a:b][new].astype(np.int64)]
        depths[start[lo] : start[hi]] = depth[new]
    parents = np.arange(-1, size - 1, dtype=np.int32)
    order, level = _by_level(depths)  # the nodes of depth d, in preorder: order[level[d]:level[d + 1]]
    firsts, first_level = _by_level(shared)  # the rows by the depth of their first new node, likewise
    firsts = start[firsts]
    end = np.empty(size, dtype=np.int32)
    for d in range(len(level) - 1):  # top down: first nodes' parents, then where each subtree ends
        nodes = order[level[d] : level[d + 1]]
        first = firsts[first_level[min(d, len(first_level) - 1)] : first_level[min(d + 1, len(first_level) - 1)]]
        if d:
            up = order[level[d - 1] : level[d]]
            parents[first] = up[np.searchsorted(up, first) - 1]
        else:
            parents[first] = -1
        nxt = np.append(nodes[1:], size).astype(np.int32) - 1
        end[nodes] = nxt if not d else np.minimum(nxt, end[parents[nodes]])
    row_node = (start[1:] - 1).astype(np.int32)
    kind = np.int32 if max(int(counts.sum()), 0) < 2**31 and (counts >= 0).all() else np.int64
    own = np.zeros(size + 1, dtype=np.int64)
    own[row_node + 1] = counts
    upto = np.cumsum(own)
    values = (upto[end.astype(np.int64) + 1] - upto[:-1]).astype(kind).reshape(1, size)
    return Nodes(frames, frame, depths, parents, values, totals, end, row_node)


def small_ids(top: int) -> type:
    """The dtype of node arrays whose values stay below ``top`` (frame indices, depths): uint8 or uint16 when
    they fit, a quarter or half the memory of int32 (a trie has millions of nodes). Widen before arithmetic
    that can pass it."""
    return np.uint8 if top <= 1 << 8 else np.uint16 if top <= 1 << 16 else np.int32


def _by_level(depth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(indices ordered by depth, ascending within a depth; where each depth's run starts, and one past
    the deepest's end): a stable radix sort when depths fit 16 bits."""
    top = int(depth.max()) if len(depth) else 0
    order = np.argsort(depth.astype(np.uint16) if top < 2**16 else depth, kind="stable")
    return order, np.searchsorted(depth[order], np.arange(top + 2))


def _build(
    frames: Sequence[str],
    ids: np.ndarray,
    lengths: np.ndarray,
    counts: np.ndarray,
    col_of: np.ndarray,
    width: int,
    totals: list[int],
    rank: np.ndarray | None = None,
) -> Nodes:
    """Level-order nodes (unique (parent, frame) per depth), then renumbered in preorder. ``rank``
    maps the ids to positions in ``frames`` (None: they are positions already)."""
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    alive = np.flatnonzero(lengths > 0)
    node_of = np.zeros(len(lengths), dtype=np.int32)
    parent_l: list[np.ndarray] = []
    frame_l: list[np.ndarray] = []
    # values in int32 when no sum can pass it (a node's value is at most its column's total): half the memory
    kind = np.int32 if max(int(counts.sum()), 0) < 2**31 and (counts >= 0).all() else np.int64
    base = 0
    depth = 0
    while len(alive):
        f = ids[offsets[alive] + depth].astype(np.int64)
        if rank is not None:
            f = rank[f]
        key = f if depth == 0 else (node_of[alive].astype(np.int64) << 32) | f
        uniq, inverse = np.unique(key, return_inverse=True)
        inverse = inverse.reshape(-1)
        # node-indexed arrays in int32 (a trie of 2**31 nodes is far past any budget): half the memory
        parent_l.append(np.full(len(uniq), -1, np.int32) if depth == 0 else (uniq >> 32).astype(np.int32))
        frame_l.append((uniq & 0xFFFFFFFF if depth else uniq).astype(small_ids(len(frames))))
        node_of[alive] = base + inverse
        ends = lengths[alive] == depth + 1
        base += len(uniq)
        alive = alive[~ends]
        depth += 1
    if not parent_l:
        empty = np.zeros(0, np.int64)
        return Nodes(frames, empty, empty, empty, np.zeros((width, 0), np.int64), totals, empty)
    parent = np.concatenate(parent_l)
    level_start = np.cumsum([0] + [len(p) for p in parent_l])
    del parent_l
    size = np.ones(len(parent), dtype=np.int32)
    for d in range(len(level_start) - 2, 0, -1):  # bottom-up sums: subtree sizes
        nodes = np.arange(level_start[d], level_start[d + 1])
        np.add.at(size, parent[nodes], size[nodes])
    # renumbered in preorder: parents and subtree ends turned into preorder numbers in place, then each array
    # reordered a block at a time, its level-order one freed then
    pre = _preorder(parent, size, level_start)
    row_node = np.where(lengths > 0, pre[node_of], -1)
    del node_of
    for lo in range(0, len(pre), NODE_BLOCK):
        up = parent[lo : lo + NODE_BLOCK]
        up[:] = np.where(up >= 0, pre[np.maximum(up, 0)], -1)
        size[lo : lo + NODE_BLOCK] += pre[lo : lo + NODE_BLOCK] - 1  # a subtree ends size - 1 nodes after its top
    perm = np.empty_like(pre)  # preorder index -> level-order node
    for lo in range(0, len(pre), NODE_BLOCK):
        perm[pre[lo : lo + NODE_BLOCK]] = np.arange(lo, min(lo + NODE_BLOCK, len(pre)), dtype=np.int32)
    del pre
    new_parent = _permuted(parent, perm)
    del parent
    end = _permuted(size, perm)
    del size
    frame = _permuted(np.concatenate(frame_l), perm)
    del frame_l
    levels: np.ndarray = np.arange(len(level_start) - 1).astype(small_ids(len(level_start)))
    depths = _permuted(np.repeat(levels, np.diff(level_start)), perm)
    del perm
    values = _subtree_sums(end, row_node, counts, col_of, width, kind)
    return Nodes(frames, frame, depths, new_parent, values, totals, end, row_node)


def _subtree_sums(
    end: np.ndarray, row_node: np.ndarray, counts: np.ndarray, col_of: np.ndarray, width: int, kind: type
) -> np.ndarray:
    """Per column, each preorder node's value: the samples of the rows ending in its subtree (nodes j..end[j]),
    as differences of running sums of the rows' samples placed at their end nodes (no level-order copy)."""
    upto: np.ndarray = np.zeros((width, len(end) + 1), dtype=kind)
    live = row_node >= 0
    for c in range(width):
        pick = live & (col_of == c)
        np.add.at(upto[c], row_node[pick] + 1, counts[pick].astype(kind))
    np.cumsum(upto, axis=1, dtype=kind, out=upto)
    values: np.ndarray = np.empty((width, len(end)), dtype=kind)
    for lo in range(0, len(end), NODE_BLOCK):
        hi = min(lo + NODE_BLOCK, len(end))
        values[:, lo:hi] = upto[:, end[lo:hi].astype(np.int64) + 1] - upto[:, lo:hi]
    return values


def _permuted(values: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """``values[..., perm]`` filled a block at a time (no index array as long as the trie beside it)."""
    out = np.empty_like(values)
    for lo in range(0, len(perm), NODE_BLOCK):
        out[..., lo : lo + NODE_BLOCK] = values[..., perm[lo : lo + NODE_BLOCK]]
    return out


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

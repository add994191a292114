"""Compact flame-graph trees: preorder parallel arrays (name index, depth, value) over a string table."""

from __future__ import annotations

import json
import re
from typing import Any, Mapping, Sequence

from ..model.profile import Stack

# Kinds drive the colours in the report: what the frame is, not how hot it is.
KIND_USER, KIND_KERNEL, KIND_UNNAMED, KIND_PROCESS, KIND_ELIDED = 0, 1, 2, 3, 4
ELIDED_NAME = "[elided frames]"
_ELIDED_KEY = "\0elided\0"
_ROOT_PREFIX = "\0root\0"
_HEX_ADDR = re.compile(r"^(0x)?[0-9a-fA-F]{6,}$")
DEFAULT_MAX_NODES = 200_000
DEFAULT_MAX_BYTES = 2_500_000  # the tree's JSON; the rest of a report is rarely over 400 kB


def frame_kind(name: str, depth: int) -> int:
    """User, kernel (``_[k]``), unnamed (``[unknown]``, ``[dso]``, bare address) or process root."""
    if depth == 0:
        return KIND_PROCESS
    if name.endswith("_[k]"):
        return KIND_KERNEL
    if (name.startswith("[") and name.endswith("]")) or _HEX_ADDR.match(name):
        return KIND_UNNAMED
    return KIND_USER


def _walk(stacks: Sequence[tuple[Stack, Sequence[int]]], width: int) -> tuple[list[str], list[int], list[int], list[list[int]]]:
    """Preorder nodes of the trie of sorted stacks: (frame, depth, parent, per-column value sums).

    Counts are added at each stack's last node, then summed into parents in one reverse pass,
    so the work grows with the number of nodes rather than with stacks × depth.
    """
    names: list[str] = []
    depths: list[int] = []
    parents: list[int] = []
    values: list[list[int]] = [[] for _ in range(width)]
    path: Stack = ()
    path_idx: list[int] = []
    for stack, counts in stacks:
        common = 0
        limit = min(len(path), len(stack))
        while common < limit and path[common] == stack[common]:
            common += 1
        del path_idx[common:]
        for depth in range(common, len(stack)):
            parents.append(path_idx[-1] if path_idx else -1)
            path_idx.append(len(names))
            names.append(stack[depth])
            depths.append(depth)
            for col in values:
                col.append(0)
        path = stack
        leaf = path_idx[-1]
        for col, count in zip(values, counts):
            col[leaf] += count
    for col in values:
        for i in range(len(names) - 1, -1, -1):
            if parents[i] >= 0:
                col[parents[i]] += col[i]
    return names, depths, parents, values


def _weights(values: list[list[int]], totals: list[int]) -> list[float]:
    """Each node's largest share over the columns (a child never outweighs its parent)."""
    cols = [[v / t for v in col] if t else [0.0] * len(col) for col, t in zip(values, totals)]
    return cols[0] if len(cols) == 1 else [max(ws) for ws in zip(*cols)]


def _cut(order: list[int], names: list[str], weight: list[float], width: int, max_nodes: int, max_bytes: int) -> float:
    """The weight at which the budget runs out, taking nodes widest first; -1 when everything fits."""
    seen: set[str] = set()
    used = 0
    per_node = 6 + 4 * width  # name index, depth and one value per column, with separators
    for rank, i in enumerate(order):
        used += per_node
        if names[i] not in seen:
            seen.add(names[i])
            used += len(names[i].encode("utf-8")) + 5
        if rank >= max_nodes or used > max_bytes:
            return weight[i]
    return -1.0


def _keep(depths: list[int], weight: list[float], threshold: float) -> list[int]:
    """Indices to keep: nodes (with their subtrees) above ``threshold``, in preorder."""
    keep: list[int] = []
    skip_below = -1
    for i, depth in enumerate(depths):
        if skip_below >= 0:
            if depth > skip_below:
                continue
            skip_below = -1
        if weight[i] <= threshold:
            skip_below = depth
            continue
        keep.append(i)
    return keep


def _key(name: str, depth: int) -> str:
    """String-table key: a process root and a frame of the same name are different entries."""
    return name if depth else _ROOT_PREFIX + name


def _own(values: list[list[int]], parents: list[int]) -> list[list[int]]:
    """Per column, each node's own (self) samples: its value less its children's."""
    out = []
    for col in values:
        own = col[:]
        for i, p in enumerate(parents):
            if p >= 0:
                own[p] -= col[i]
        out.append(own)
    return out


def _elided_groups(names: list[str], depths: list[int], parents: list[int], own: list[list[int]],
                   kept: list[bool]) -> dict[int, dict[str, list[int]]]:
    """For each kept node (-1: none kept above), the samples of its left-out descendants by leaf frame."""
    width = len(own)
    anchor = [0] * len(names)
    groups: dict[int, dict[str, list[int]]] = {}
    for i, p in enumerate(parents):
        if kept[i]:
            anchor[i] = i
            continue
        a = anchor[i] = anchor[p] if p >= 0 else -1
        counts = [col[i] for col in own]
        if counts == [0] * width:
            continue
        leaves = groups.setdefault(a, {})
        key = _key(names[i], depths[i])
        if key in leaves:
            leaves[key] = [x + y for x, y in zip(leaves[key], counts)]
        else:
            leaves[key] = counts
    return groups


class _Out:
    """The arrays being written: string table, per-node name index, depth and value columns."""

    def __init__(self, width: int) -> None:
        self.table: dict[str, int] = {}
        self.strings: list[str] = []
        self.kinds: list[int] = []
        self.name: list[int] = []
        self.depth: list[int] = []
        self.values: list[list[int]] = [[] for _ in range(width)]

    def index(self, key: str) -> int:
        """The string-table entry for a key, added on first use."""
        if key not in self.table:
            self.table[key] = len(self.strings)
            if key == _ELIDED_KEY:
                self.strings.append(ELIDED_NAME)
                self.kinds.append(KIND_ELIDED)
            else:
                name = key[len(_ROOT_PREFIX):] if key.startswith(_ROOT_PREFIX) else key
                self.strings.append(name)
                self.kinds.append(frame_kind(name, 0 if key.startswith(_ROOT_PREFIX) else 1))
        return self.table[key]

    def add(self, key: str, depth: int, counts: Sequence[int]) -> None:
        self.name.append(self.index(key))
        self.depth.append(depth)
        for col, count in zip(self.values, counts):
            col.append(count)


def _by_name(key: str) -> tuple[str, str]:
    return key.replace(_ROOT_PREFIX, ""), key


def _emit(names: list[str], depths: list[int], parents: list[int], values: list[list[int]], keep: list[int],
          groups: dict[int, dict[str, list[int]]], min_leaf: list[int]) -> tuple[_Out, list[int], dict[str, list[int]]]:
    """Kept nodes in preorder; after each kept node's subtree, an elided child with its leaves.

    A leaf frame under an elided node is shown when it is at least ``min_leaf`` samples in some
    column; smaller ones stay in the elided node's own (self) samples. Returns the arrays, per
    column the samples under elided nodes, and per leaf frame the samples not shown under one:
    one list per column, then one more per column counting those whose kept callers already
    include the same function (a recursive call), which a sandwich has counted once already.
    """
    width = len(values)
    out = _Out(width)
    elided = [0] * width
    hidden: dict[str, list[int]] = {}

    def group(anchor: int, depth: int) -> None:
        leaves = groups.get(anchor)
        if not leaves:
            return
        mass = [sum(c[k] for c in leaves.values()) for k in range(width)]
        out.add(_ELIDED_KEY, depth, mass)
        elided[:] = [e + m for e, m in zip(elided, mass)]
        callers: set[str] = set()
        k = anchor
        while k >= 0:
            callers.add(_key(names[k], depths[k]))
            k = parents[k]
        for key in sorted(leaves, key=_by_name):
            counts = leaves[key]
            if any(c >= m for c, m in zip(counts, min_leaf)):
                out.add(key, depth + 1, counts)
                continue
            sums = hidden.setdefault(key, [0] * (2 * width))
            for c in range(width):
                sums[c] += counts[c]
                sums[width + c] += counts[c] if key in callers else 0

    open_: list[int] = []
    for i in keep:
        while open_ and depths[open_[-1]] >= depths[i]:
            p = open_.pop()
            group(p, depths[p] + 1)
        out.add(_key(names[i], depths[i]), depths[i], [col[i] for col in values])
        open_.append(i)
    while open_:
        p = open_.pop()
        group(p, depths[p] + 1)
    group(-1, 0)
    return out, elided, hidden


def _tree(names: list[str], depths: list[int], parents: list[int], values: list[list[int]], totals: list[int],
          weight: list[float], threshold: float) -> dict[str, Any]:
    """The payload tree keeping the nodes wider than ``threshold`` (-1: all of them)."""
    keep = _keep(depths, weight, threshold) if threshold >= 0 else list(range(len(names)))
    groups: dict[int, dict[str, list[int]]] = {}
    if len(keep) < len(names):
        kept = [False] * len(names)
        for i in keep:
            kept[i] = True
        groups = _elided_groups(names, depths, parents, _own(values, parents), kept)
    out, elided, hidden = _emit(names, depths, parents, values, keep, groups, [int(threshold * t) + 1 for t in totals])
    order, width = sorted(hidden, key=_by_name), len(totals)
    return {
        "names": out.strings, "kinds": out.kinds, "name": out.name, "depth": out.depth, "values": out.values,
        "totals": totals, "pruned": len(names) - len(keep), "min_share": max(threshold, 0.0),
        "elided": elided, "elided_leafless": [sum(c[k] for c in hidden.values()) for k in range(width)],
        "elided_self": {"name": [out.index(k) for k in order],
                        "values": [[hidden[k][c] for k in order] for c in range(width)],
                        "nested": [[hidden[k][width + c] for k in order] for c in range(width)]},
    }


def _fits(tree: dict[str, Any], max_nodes: int, max_bytes: int) -> tuple[bool, int]:
    size = len(json.dumps(tree, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    return len(tree["name"]) <= max_nodes and size <= max_bytes, size


def build_tree(
    columns: Sequence[Mapping[Stack, int]], max_nodes: int = DEFAULT_MAX_NODES, max_bytes: int = DEFAULT_MAX_BYTES
) -> dict[str, Any]:
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
    samples are in the payload even then.
    """
    width = len(columns)
    merged: dict[Stack, list[int]] = {}
    for col, stacks in enumerate(columns):
        for stack, count in stacks.items():
            if stack:
                merged.setdefault(stack, [0] * width)[col] += count
    names, depths, parents, values = _walk(sorted(merged.items(), key=lambda kv: kv[0]), width)
    totals = [sum(c for s, c in stacks.items() if s) for stacks in columns]
    weight = _weights(values, totals)
    if len(names) <= max_nodes:
        tree = _tree(names, depths, parents, values, totals, weight, -1.0)
        if _fits(tree, max_nodes, max_bytes)[0]:
            return tree
    order = sorted(range(len(names)), key=weight.__getitem__, reverse=True)
    node_budget, byte_budget = max_nodes * 9 // 10, max_bytes * 9 // 10  # room for the elided nodes
    for _ in range(8):
        tree = _tree(names, depths, parents, values, totals, weight,
                     _cut(order, names, weight, width, node_budget, byte_budget))
        fits, size = _fits(tree, max_nodes, max_bytes)
        if fits:
            break
        node_budget = int(node_budget * min(0.9, max_nodes / len(tree["name"])))
        byte_budget = int(byte_budget * min(0.9, max_bytes / size))
    return tree

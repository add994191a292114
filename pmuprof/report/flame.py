"""Compact flame-graph trees: preorder parallel arrays (name index, depth, value) over a string table."""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from ..model.labels import is_kernel, is_unnamed
from ..model.profile import Stack

# Kinds drive the colours in the report: what the frame is, not how hot it is.
KIND_USER, KIND_KERNEL, KIND_UNNAMED, KIND_PROCESS = 0, 1, 2, 3
_HEX_ADDR = re.compile(r"^(0x)?[0-9a-fA-F]{6,}$")
DEFAULT_MAX_NODES = 200_000


def frame_kind(name: str, depth: int) -> int:
    """User, kernel (``_[k]``), unnamed (``[unknown]``, ``[dso]``, bare address) or process root."""
    if depth == 0:
        return KIND_PROCESS
    if is_kernel(name):
        return KIND_KERNEL
    if is_unnamed(name) or _HEX_ADDR.match(name):
        return KIND_UNNAMED
    return KIND_USER


def _walk(stacks: Sequence[tuple[Stack, Sequence[int]]], width: int) -> tuple[list[str], list[int], list[list[int]]]:
    """Preorder nodes of the trie of sorted stacks: (frame, depth, per-column value sums).

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
    return names, depths, values


def _prune(depths: list[int], weight: list[float], min_weight: float) -> list[int]:
    """Indices to keep: nodes (with their subtrees) above ``min_weight``."""
    keep: list[int] = []
    skip_below = -1
    for i, depth in enumerate(depths):
        if skip_below >= 0:
            if depth > skip_below:
                continue
            skip_below = -1
        if weight[i] <= min_weight:
            skip_below = depth
            continue
        keep.append(i)
    return keep


def _weights(values: list[list[int]], totals: list[int]) -> list[float]:
    """Each node's largest share over the columns (a child never outweighs its parent)."""
    cols = [[v / t for v in col] if t else [0.0] * len(col) for col, t in zip(values, totals)]
    return cols[0] if len(cols) == 1 else [max(ws) for ws in zip(*cols)]


def build_tree(
    columns: Sequence[Mapping[Stack, int]], max_nodes: int = DEFAULT_MAX_NODES
) -> dict[str, Any]:
    """One tree over several stack maps (one value column each, e.g. before/after).

    Children are ordered by name (like flamegraph.pl), so the same input gives the same
    arrays. When the tree has more than ``max_nodes`` nodes, the narrowest subtrees are
    dropped (their samples stay in the parent's total), ``pruned`` says how many and
    ``min_share`` the share at or below which nodes were left out.
    """
    merged: dict[Stack, list[int]] = {}
    for col, stacks in enumerate(columns):
        for stack, count in stacks.items():
            if stack:
                merged.setdefault(stack, [0] * len(columns))[col] += count
    ordered = sorted(merged.items(), key=lambda kv: kv[0])
    names, depths, values = _walk(ordered, len(columns))
    totals = [sum(c for s, c in stacks.items() if s) for stacks in columns]
    keep = list(range(len(names)))
    threshold = 0.0
    if len(names) > max_nodes:
        weight = _weights(values, totals)
        threshold = sorted(weight, reverse=True)[max_nodes]
        keep = _prune(depths, weight, threshold)
    table: dict[str, int] = {}
    strings: list[str] = []
    kinds: list[int] = []
    name_idx: list[int] = []
    for i in keep:
        key = names[i] if depths[i] else "\0root\0" + names[i]
        if key not in table:
            table[key] = len(strings)
            strings.append(names[i])
            kinds.append(frame_kind(names[i], depths[i]))
        name_idx.append(table[key])
    return {
        "names": strings,
        "kinds": kinds,
        "name": name_idx,
        "depth": [depths[i] for i in keep],
        "values": [[col[i] for i in keep] for col in values],
        "totals": totals,
        "pruned": len(names) - len(keep),
        "min_share": threshold,
    }

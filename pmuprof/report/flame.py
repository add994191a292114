"""Compact flame-graph trees: preorder parallel arrays (name index, depth, value) over a string table."""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from ..model.profile import Stack

# Kinds drive the colours in the report: what the frame is, not how hot it is.
KIND_USER, KIND_KERNEL, KIND_UNNAMED, KIND_PROCESS = 0, 1, 2, 3
_HEX_ADDR = re.compile(r"^(0x)?[0-9a-fA-F]{6,}$")
DEFAULT_MAX_NODES = 200_000


def frame_kind(name: str, depth: int) -> int:
    """User, kernel (``_[k]``), unnamed (``[unknown]``, ``[dso]``, bare address) or process root."""
    if depth == 0:
        return KIND_PROCESS
    if name.endswith("_[k]"):
        return KIND_KERNEL
    if (name.startswith("[") and name.endswith("]")) or _HEX_ADDR.match(name):
        return KIND_UNNAMED
    return KIND_USER


def _walk(stacks: Sequence[tuple[Stack, Sequence[int]]], width: int) -> tuple[list[str], list[int], list[list[int]]]:
    """Preorder nodes of the trie of sorted stacks: (frame, depth, per-column value sums)."""
    names: list[str] = []
    depths: list[int] = []
    values: list[list[int]] = [[] for _ in range(width)]
    path: list[str] = []
    path_idx: list[int] = []
    for stack, counts in stacks:
        common = 0
        limit = min(len(path), len(stack))
        while common < limit and path[common] == stack[common]:
            common += 1
        del path[common:], path_idx[common:]
        for depth in range(common, len(stack)):
            path.append(stack[depth])
            path_idx.append(len(names))
            names.append(stack[depth])
            depths.append(depth)
            for col in values:
                col.append(0)
        for idx in path_idx:
            for col, count in zip(values, counts):
                col[idx] += count
    return names, depths, values


def _prune(depths: list[int], weight: list[float], min_weight: float) -> list[int]:
    """Indices to keep: nodes (with their subtrees) at or above ``min_weight``."""
    keep: list[int] = []
    skip_below: int | None = None
    for i, depth in enumerate(depths):
        if skip_below is not None:
            if depth > skip_below:
                continue
            skip_below = None
        if weight[i] < min_weight:
            skip_below = depth
            continue
        keep.append(i)
    return keep


def build_tree(
    columns: Sequence[Mapping[Stack, int]], max_nodes: int = DEFAULT_MAX_NODES
) -> dict[str, Any]:
    """One tree over several stack maps (one value column each, e.g. before/after).

    Children are ordered by name (like flamegraph.pl), so the same input gives the same
    arrays. When the tree has more than ``max_nodes`` nodes, the narrowest subtrees are
    dropped (their samples stay in the parent's total) and ``pruned`` says how many.
    """
    merged: dict[Stack, list[int]] = {}
    for col, stacks in enumerate(columns):
        for stack, count in stacks.items():
            if stack:
                merged.setdefault(stack, [0] * len(columns))[col] += count
    ordered = sorted(merged.items(), key=lambda kv: kv[0])
    names, depths, values = _walk(ordered, len(columns))
    totals = [sum(c for s, c in stacks.items() if s) for stacks in columns]
    weight = [max(v / t if t else 0.0 for v, t in zip(vals, totals)) for vals in zip(*values)] if names else []
    keep = list(range(len(names)))
    threshold = 0.0
    while len(keep) > max_nodes:
        threshold = threshold * 2 if threshold else 1e-6
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

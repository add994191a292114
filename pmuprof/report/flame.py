"""Compact flame-graph trees: preorder parallel arrays (name index, depth, value) over a string table."""

from __future__ import annotations

import json
import re
from typing import Any, Mapping, Sequence

from ..model.labels import is_kernel, is_unnamed
from ..model.profile import Stack
from .flametrie import ROOT_PREFIX, Trie, key_of

# Kinds drive the colours in the report: what the frame is, not how hot it is.
KIND_USER, KIND_KERNEL, KIND_UNNAMED, KIND_PROCESS, KIND_ELIDED = 0, 1, 2, 3, 4
ELIDED_NAME = "[elided frames]"
_ELIDED_KEY = "\0elided\0"
_HEX_ADDR = re.compile(r"^(0x)?[0-9a-fA-F]{6,}$")
DEFAULT_MAX_NODES = 200_000
DEFAULT_MAX_BYTES = 2_500_000  # the tree's JSON; the rest of a report is rarely over 400 kB


def frame_kind(name: str, depth: int) -> int:
    """User, kernel (``_[k]``), unnamed (``[unknown]``, ``[dso]``, bare address) or process root."""
    if depth == 0:
        return KIND_PROCESS
    if is_kernel(name):
        return KIND_KERNEL
    if is_unnamed(name) or _HEX_ADDR.match(name):
        return KIND_UNNAMED
    return KIND_USER


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
                name = key[len(ROOT_PREFIX):] if key.startswith(ROOT_PREFIX) else key
                self.strings.append(name)
                self.kinds.append(frame_kind(name, 0 if key.startswith(ROOT_PREFIX) else 1))
        return self.table[key]

    def add(self, key: str, depth: int, counts: Sequence[int]) -> None:
        self.name.append(self.index(key))
        self.depth.append(depth)
        for col, count in zip(self.values, counts):
            col.append(count)


def _by_name(key: str) -> tuple[str, str]:
    return key.replace(ROOT_PREFIX, ""), key


def _emit(trie: Trie, keep: list[int], groups: dict[int, dict[str, list[int]]], min_leaf: list[int]) -> tuple[_Out, list[int], dict[str, list[int]]]:
    """Kept nodes in preorder; after each kept node's subtree, an elided child with its leaves.

    A leaf frame under an elided node is shown when it is at least ``min_leaf`` samples in some
    column; smaller ones stay in the elided node's own (self) samples. Returns the arrays, per
    column the samples under elided nodes, and per leaf frame the samples not shown under one:
    one list per column, then one more per column counting those whose kept callers already
    include the same function (a recursive call), which a sandwich has counted once already.
    """
    names, depths, values, width = trie.names, trie.depths, trie.values, len(trie.totals)
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
        callers = trie.callers(anchor)
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
        out.add(key_of(names[i], depths[i]), depths[i], [col[i] for col in values])
        open_.append(i)
    while open_:
        p = open_.pop()
        group(p, depths[p] + 1)
    group(-1, 0)
    return out, elided, hidden


def _tree(trie: Trie, threshold: float, own: list[list[int]]) -> dict[str, Any]:
    """The payload tree keeping the nodes wider than ``threshold`` (-1: all of them)."""
    names, totals, width = trie.names, trie.totals, len(trie.totals)
    keep = trie.keep(threshold) if threshold >= 0 else list(range(len(names)))
    groups = trie.elided_groups(own, keep) if len(keep) < len(names) else {}
    out, elided, hidden = _emit(trie, keep, groups, [int(threshold * t) + 1 for t in totals])
    order = sorted(hidden, key=_by_name)
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
    totals = [sum(c for s, c in stacks.items() if s) for stacks in columns]
    trie = Trie.build(sorted(merged.items(), key=lambda kv: kv[0]), totals)
    if len(trie.names) <= max_nodes:
        tree = _tree(trie, -1.0, [])
        if _fits(tree, max_nodes, max_bytes)[0]:
            return tree
    own = trie.own()
    node_budget, byte_budget = max_nodes * 9 // 10, max_bytes * 9 // 10  # room for the leaves under elided nodes
    for _ in range(8):
        tree = _tree(trie, trie.cut(node_budget, byte_budget), own)
        fits, size = _fits(tree, max_nodes, max_bytes)
        if fits:
            break
        node_budget = int(node_budget * min(0.9, max_nodes / len(tree["name"])))
        byte_budget = int(byte_budget * min(0.9, max_bytes / size))
    return tree

"""The trie of folded stacks for the flame graph, and what fits of it: budget cut, kept nodes, elided samples."""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from functools import cached_property
from typing import Sequence

from ..model.profile import Stack

ROOT_PREFIX = "\0root\0"


def key_of(name: str, depth: int) -> str:
    """String-table key: a process root and a frame of the same name are different entries."""
    return name if depth else ROOT_PREFIX + name


@dataclass(frozen=True)
class Trie:
    """Preorder nodes of the trie of sorted stacks: frame, depth, parent, per-column sums, widest share."""

    names: list[str]
    depths: list[int]
    parents: list[int]
    values: list[list[int]]
    totals: list[int]
    weight: list[float]

    @classmethod
    def build(cls, stacks: Sequence[tuple[Stack, Sequence[int]]], totals: list[int]) -> "Trie":
        """Counts are added at each stack's last node, then summed into parents in one reverse pass,
        so the work grows with the number of nodes rather than with stacks × depth."""
        names: list[str] = []
        depths: list[int] = []
        parents: list[int] = []
        values: list[list[int]] = [[] for _ in totals]
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
        return cls(names, depths, parents, values, totals, _weights(values, totals))

    def own(self) -> list[list[int]]:
        """Per column, each node's own (self) samples: its value less its children's."""
        out = []
        for col in self.values:
            own = col[:]
            for i, p in enumerate(self.parents):
                if p >= 0:
                    own[p] -= col[i]
            out.append(own)
        return out

    def keep(self, threshold: float) -> list[int]:
        """Indices of the nodes wider than ``threshold`` (a prefix-closed set), in preorder."""
        keep: list[int] = []
        skip_below = -1
        weight = self.weight
        for i, depth in enumerate(self.depths):
            if skip_below >= 0:
                if depth > skip_below:
                    continue
                skip_below = -1
            if weight[i] <= threshold:
                skip_below = depth
                continue
            keep.append(i)
        return keep

    def cut(self, max_nodes: int, max_bytes: int) -> float:
        """The weight at which the budget runs out, taking nodes widest first; -1 when all fit.

        Counts what the kept nodes cost and, for each one with a child left out, the elided node
        that will hold that child's samples (a node with a child no wider than the cut).
        """
        weight, names, narrowest = self.weight, self.names, self.narrowest_child
        per_node = 6 + 4 * len(self.totals)  # name index, depth and one value per column, with separators
        pending: list[float] = []  # narrowest-child widths of taken nodes, not yet above the cut
        whole = 0  # taken nodes that keep all their children at this cut
        seen: set[str] = set()
        used = 0
        for rank, i in enumerate(self.widest_first):
            while pending and -pending[0] > weight[i]:
                heapq.heappop(pending)
                whole += 1
            elided = rank - whole
            if rank + elided >= max_nodes or used + elided * per_node > max_bytes:
                return weight[i]
            used += per_node
            if names[i] not in seen:
                seen.add(names[i])
                used += len(names[i].encode("utf-8")) + 5
            heapq.heappush(pending, -narrowest[i])
        return -1.0

    @cached_property
    def widest_first(self) -> list[int]:
        """Node indices by weight, widest first (ties in preorder)."""
        return sorted(range(len(self.names)), key=self.weight.__getitem__, reverse=True)

    @cached_property
    def narrowest_child(self) -> list[float]:
        """Each node's narrowest child's weight; a leaf's own weight (it never gets an elided child)."""
        narrowest = self.weight[:]
        first = [True] * len(narrowest)
        for i, p in enumerate(self.parents):
            if p >= 0 and (first[p] or self.weight[i] < narrowest[p]):
                narrowest[p] = self.weight[i]
                first[p] = False
        return narrowest

    def elided_groups(self, own: list[list[int]], keep: list[int]) -> dict[int, dict[str, list[int]]]:
        """For each kept node (-1: none kept above), the own samples of its left-out descendants by leaf frame."""
        names, depths, width = self.names, self.depths, len(own)
        kept = [False] * len(names)
        for i in keep:
            kept[i] = True
        has_own = own[0] if width == 1 else [any(v) for v in zip(*own)]
        groups: dict[int, dict[str, list[int]]] = {}
        anchor = -1  # preorder: a left-out node's nearest kept caller is its subtree root's parent
        for i, p in enumerate(self.parents):
            if kept[i]:
                continue
            if p < 0 or kept[p]:
                anchor = p
            if not has_own[i]:
                continue
            leaves = groups.setdefault(anchor, {})
            counts = leaves.setdefault(key_of(names[i], depths[i]), [0] * width)
            for c in range(width):
                counts[c] += own[c][i]
        return groups

    def callers(self, node: int) -> set[str]:
        """Keys of the node and all its callers."""
        out: set[str] = set()
        while node >= 0:
            out.add(key_of(self.names[node], self.depths[node]))
            node = self.parents[node]
        return out


def _weights(values: list[list[int]], totals: list[int]) -> list[float]:
    """Each node's largest share over the columns (a child never outweighs its parent)."""
    cols = [[v / t for v in col] if t else [0.0] * len(col) for col, t in zip(values, totals)]
    return cols[0] if len(cols) == 1 else [max(ws) for ws in zip(*cols)]

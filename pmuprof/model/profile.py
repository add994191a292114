"""The Profile: folded stacks plus counters and facts, the one input of findings and writers."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

Stack = tuple[str, ...]


@dataclass(frozen=True)
class Leaf:
    """Samples whose leaf frame sits at ``offset`` bytes into ``symbol`` of ``dso``."""

    dso: str
    symbol: str
    offset: int
    count: int


@dataclass(frozen=True)
class Profile:
    """Folded stacks (root first; frame 0 is the process label) with the run's facts.

    ``run`` is run.json (minimal for bare inputs), ``counters`` is counters.json,
    ``mysql`` is mysql.json or None when the server was not reachable.
    """

    stacks: Mapping[Stack, int]
    run: Mapping[str, Any] = field(default_factory=dict)
    counters: Mapping[str, Any] = field(default_factory=dict)
    mysql: Mapping[str, Any] | None = None
    leaves: tuple[Leaf, ...] = ()
    source: str = ""
    unit: str = "samples"

    @property
    def total(self) -> int:
        return sum(self.stacks.values())

    def processes(self) -> list[str]:
        """Root frames (process labels), most samples first."""
        roots: Counter[str] = Counter()
        for stack, count in self.stacks.items():
            if stack:
                roots[stack[0]] += count
        return [name for name, _ in sorted(roots.items(), key=lambda kv: (-kv[1], kv[0]))]

    def self_counts(self) -> Counter[str]:
        """Samples whose leaf is each function (the process root excluded)."""
        out: Counter[str] = Counter()
        for stack, count in self.stacks.items():
            if len(stack) > 1:
                out[stack[-1]] += count
        return out

    def inclusive_counts(self) -> Counter[str]:
        """Samples with each function anywhere on the stack (counted once per stack)."""
        out: Counter[str] = Counter()
        for stack, count in self.stacks.items():
            for frame in set(stack[1:]):
                out[frame] += count
        return out

    def restrict(self, roots: Iterable[str]) -> "Profile":
        """The same profile keeping only stacks under the given process labels."""
        keep = set(roots)
        stacks = {s: c for s, c in self.stacks.items() if s and s[0] in keep}
        return Profile(stacks, self.run, self.counters, self.mysql, self.leaves, self.source, self.unit)


def merge_stacks(parts: Iterable[Mapping[Stack, int]]) -> dict[Stack, int]:
    """Sum several stack maps into one."""
    total: Counter[Stack] = Counter()
    for part in parts:
        total.update(part)
    return dict(total)

"""The Profile: folded stacks with the run's typed facts, the one input of findings and writers."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Iterable, Mapping

from .analysis import Analysis, Process
from .counters import Counters
from .run import Run, Target
from .server import ServerFacts

Stack = tuple[str, ...]


@dataclass(frozen=True)
class Leaf:
    """Samples whose leaf frame sits at ``offset`` bytes into ``symbol`` of ``dso`` (symbol "" : unnamed, offset = vaddr)."""

    dso: str
    symbol: str
    offset: int
    count: int


@dataclass(frozen=True)
class Profile:
    """Folded stacks (root first; frame 0 is the process label) with the run's facts.

    ``server`` is None when no server facts exist (a bare perf.data, or the server was unreachable:
    then ``run`` says why); ``analysis`` holds what the analysis stage found.
    """

    stacks: Mapping[Stack, int]
    run: Run = field(default_factory=Run)
    counters: Counters = field(default_factory=Counters)
    server: ServerFacts | None = None
    analysis: Analysis = field(default_factory=Analysis)
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
        return replace(self, stacks={s: c for s, c in self.stacks.items() if s and s[0] in keep})

    def target(self, label: str) -> Target | None:
        return self.run.target_for(label)

    def process_info(self, label: str) -> Process | None:
        return next((p for p in self.analysis.processes if p.label == label and p.kept), None)

    def server_for(self, label: str) -> ServerFacts | None:
        """Server facts when they belong to this process (same pid), or when nothing says otherwise."""
        if self.server is None:
            return None
        target = self.target(label)
        info = self.process_info(label)
        pid = target.pid if target else (info.pid if info else None)
        if self.server.pid is not None and pid is not None and self.server.pid != pid:
            return None
        return self.server


def merge_stacks(parts: Iterable[Mapping[Stack, int]]) -> dict[Stack, int]:
    """Sum several stack maps into one."""
    total: Counter[Stack] = Counter()
    for part in parts:
        total.update(part)
    return dict(total)

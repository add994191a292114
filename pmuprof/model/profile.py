"""The Profile: folded stacks with the run's typed facts, the one input of findings and writers."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from collections.abc import Iterable

import numpy as np

from .analysis import Analysis, Process
from .counters import Counters
from .offcpu import OffCpuProfile
from .run import Run, Target
from .samples import Samples
from .series import SeriesSet
from .activity import Activity
from .server import ServerFacts, server_family
from .stacks import Stack as Stack  # the type callers import from here
from .stacks import Stacks
from .status import ServerStatus
from .threadtables import ThreadTables
from .wincounters import WindowCounters, estimated_own


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

    ``stacks`` is a Stacks (model/stacks.py); a plain mapping of tuples given here becomes one.
    ``server`` is None when no server facts exist (a bare perf.data, or the server was unreachable:
    then ``run`` says why); ``analysis`` holds what the analysis stage found; ``offcpu`` the off-CPU
    stacks (microseconds) and thread snapshots when the capture recorded them (``--off-cpu``).
    ``samples`` splits each stack row by thread and second (model/samples.py); None when the input
    has no thread ids or times (a folded file). ``threads`` holds the CPU-by-thread and processlist
    tables the analyse stage joined (analysis/threads.py ``tables``: model/threadtables.py, plain data as
    the report shows them); None until that stage ran for a report, or when the input has no thread ids.
    ``series`` holds what the capture's sources measured once a second (model/series.py); None for any
    other input. ``status`` the server's counters once a second and its InnoDB state (status.json,
    model/status.py); None for a run without it (an older pmuprof's, --no-mysql, a server that could not
    be reached) and bare inputs.
    ``activity`` is the processlist polled during the capture (processlist.tsv as model/activity.py's view,
    read beside the server's counters over the window); None when none was polled.
    """

    stacks: Stacks
    run: Run = field(default_factory=Run)
    counters: Counters = field(default_factory=Counters)
    server: ServerFacts | None = None
    analysis: Analysis = field(default_factory=Analysis)
    leaves: tuple[Leaf, ...] = ()
    source: str = ""
    unit: str = "samples"
    offcpu: OffCpuProfile | None = None
    samples: Samples | None = None
    threads: ThreadTables | None = None
    series: SeriesSet | None = None
    status: ServerStatus | None = None
    activity: Activity | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.stacks, Stacks):
            object.__setattr__(self, "stacks", Stacks.of(self.stacks))

    @property
    def total(self) -> int:
        return self.stacks.total

    def processes(self) -> list[str]:
        """Root frames (process labels), most samples first."""
        return [name for name, _ in sorted(self.stacks.per_root().items(), key=lambda kv: (-kv[1], kv[0]))]

    def self_counts(self) -> Counter[str]:
        """Samples whose leaf is each function (the process root excluded)."""
        return self.stacks.self_counts()

    def inclusive_counts(self) -> Counter[str]:
        """Samples with each function anywhere on the stack (counted once per stack)."""
        return self.stacks.inclusive_counts()

    def process_stacks(self, label: str) -> Stacks:
        """The stacks under one process label."""
        return self.stacks.take(self.stacks.root_ids == self.stacks.root_id(label))

    def restrict(self, roots: Iterable[str]) -> Profile:
        """The same profile keeping only stacks under the given process labels."""
        roots = tuple(roots)
        mask = np.isin(self.stacks.root_ids, [self.stacks.root_id(r) for r in roots])
        samples = self.samples.take(mask, len(self.stacks)) if self.samples is not None else None
        return replace(
            self,
            stacks=self.stacks.take(mask),
            samples=samples,
            threads=None,
            offcpu=self.offcpu.restrict(roots) if self.offcpu else None,
        )

    def target(self, label: str) -> Target | None:
        return self.run.target_for(label)

    def process_info(self, label: str) -> Process | None:
        return next((p for p in self.analysis.processes if p.label == label and p.kept), None)

    def _pid(self, label: str) -> int | None:
        target = self.target(label)
        info = self.process_info(label)
        return target.pid if target else (info.pid if info else None)

    def server_for(self, label: str) -> ServerFacts | None:
        """Server facts when they belong to this process (same pid), or when nothing says otherwise."""
        if self.server is None:
            return None
        pid = self._pid(label)
        if self.server.pid is not None and pid is not None and self.server.pid != pid:
            return None
        return self.server

    def window_counters(self, label: str) -> WindowCounters | None:
        """The server's counters over the capture (status.json, else mysql.json's status) when they belong to
        this process (same pid, as ``server_for``); None when there are none."""
        pid, status = self._pid(label), self.status
        if status is not None and status.pid is not None and pid is not None and status.pid != pid:
            status = None
        server = self.server_for(label)
        if server is None or not server.reachable:
            return WindowCounters.of(status)
        polled = (
            self.activity.polls
            if self.activity is not None and self.activity.source.startswith("processlist")
            else None
        )
        family = server.server.family or server_family(server.server.version, server.server.version_comment)
        own = estimated_own(family or "", server.status.interval_s, polled)
        return WindowCounters.of(status, server.status, own)


def process_rows(stacks: Stacks, process: str, rows: Iterable[int] | np.ndarray | None) -> np.ndarray:
    """Rows of one process's Stacks (``Profile.process_stacks``, e.g. a finding's matched rows) as rows
    of the whole profile's ``stacks``."""
    if rows is None:
        return np.zeros(0, dtype=np.int64)
    rows = np.asarray(rows, dtype=np.int64)
    root = stacks.root_id(process) if process else -1
    if root < 0:
        return rows
    return np.flatnonzero(stacks.root_ids == root)[rows]

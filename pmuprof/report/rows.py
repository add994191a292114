"""The report payload's tables: what report.html's template, report.js and report.md read, typed once.

Each is a TypedDict (plain JSON data, embedded as it is in report.html); the payload builders make them and
the writers read them. The summary's, the MySQL card's and the verdict's rows are in summaryrows.py."""

from __future__ import annotations

from typing import TypedDict

from ..findings.model import FindingJSON


class EvidenceRow(TypedDict):
    """One evidence item of a finding card: the rule's words for it, its value in words, its top chains."""

    name: str
    about: str
    text: str
    chains: list[str]


class Check(TypedDict):
    """One thing the server's facts said of a finding (report/verdict.py ``server_checks``)."""

    kind: str  # seen | refuted | missing | decided
    text: str


class Shown(TypedDict):
    """What a finding card shows beside findings.json's fields: the declared evidence in words, the levels,
    what the server's facts said."""

    evidence: list[EvidenceRow]
    levels: str
    checks: list[Check]


class ShownFinding(FindingJSON):
    """A finding as the report shows it (the cards, report.md, the embedded JSON)."""

    shown: Shown


class GroupRow(TypedDict):
    """A cause with the findings it explains (fix the cause first)."""

    cause: ShownFinding
    consequences: list[ShownFinding]


class LatchChain(TypedDict):
    """An acquirer and its callers in words, with its samples."""

    text: str
    samples: int


class LatchRow(TypedDict):
    """One row of "spin and waits by latch" (also findings.json's ``latches``)."""

    process: str
    latch: str  # latch id, or "unidentified"
    name: str
    samples: int
    share: float
    kinds: dict[str, int]  # spin | os_wait | futex | ...
    modes: dict[str, int]  # S | X | SX | U
    rule: str
    chains: list[LatchChain]


class TopRow(TypedDict):
    """A function of the top-functions table: samples with it as leaf (self) and on the stack (inclusive)."""

    name: str
    self: int
    inclusive: int
    self_share: float
    inclusive_share: float


class TopGroup(TypedDict):
    """The top functions of one process ("" first: all processes)."""

    process: str
    total: int
    rows: list[TopRow]


class NameShare(TypedDict):
    name: str
    share: float


class ComparisonRow(TypedDict):
    """One process of "targets side by side" (several processes profiled)."""

    process: str
    pid: int | None
    samples: int
    share: float
    top: list[NameShare]  # its three hottest self frames
    ipc: float | None
    numa: str
    threads: int | None


class InstructionRow(TypedDict):
    """An instruction with samples, raw (where perf saw them) and skid-corrected."""

    address: str
    offset: int
    text: str
    kind: str  # "" or pause, fence, lock, ...
    raw: int
    corrected: int
    ambiguous: bool
    moved_in: int  # samples correction moved onto it
    next_text: str | None  # the instruction after it (None: the last)


class Hotspot(TypedDict):
    """A function of "instruction hot spots (skid-corrected)"."""

    symbol: str
    binary: str
    error: str
    samples: int
    share: float
    moved: int
    raw_total: int
    corrected_total: int
    instructions: list[InstructionRow]


class CounterRow(TypedDict):
    """A counted event as the report shows it; ``note`` says why it has no value."""

    process: str
    event: str
    value: float | None
    unit: str
    enabled: float | None  # ns
    running_pct: float | None
    multiplexed: bool
    note: str


class CountersSection(TypedDict):
    """The report's counters block."""

    rows: list[CounterRow]
    scope: str
    ipc: dict[str, float]  # per process ('': the counting scope)
    multiplexed: bool  # any counter was
    error: str


class StateRow(TypedDict):
    """The wall-clock card: one process's thread time in one state group."""

    process: str
    state: str  # running, runnable, blocked ... (model/labels.py)
    about: str  # what it means
    us: int
    seconds: float
    share: float  # of the process's thread time


class ThreadGroupRow(TypedDict):
    """Threads in one state with one stack, at a snapshot (innermost frame first)."""

    count: int
    state: str
    wchan: str
    stack: str
    kernel: str
    comms: str  # 'name ×n, ...'
    off_cpu_ms: float | None
    runnable_ms: float | None  # of those woken and not yet run at the end, the longest wait for a CPU since


class SnapshotRow(TypedDict):
    """What one process's threads were doing at the capture's start or end (threads.json)."""

    label: str
    pid: int
    when: str  # start | end
    at: str
    threads: int
    states: dict[str, int]
    groups: list[ThreadGroupRow]  # most threads first
    more: int  # groups not listed
    notes: list[str]


class ElidedSelf(TypedDict):
    """Leaf frames too narrow to show under an elided node, by frame (string-table indices, a value column each)."""

    name: list[int]
    values: list[list[int]]
    nested: list[list[int]]  # the part whose kept callers include the same function


class FlameTree(TypedDict):
    """The interactive flame graph's data: preorder parallel arrays over a string table (report/flame.py)."""

    names: list[str]  # the string table
    kinds: list[int]  # per name: user, kernel, unnamed, process, elided (flame.KIND_*)
    name: list[int]  # per node: its index in ``names``
    depth: list[int]
    values: list[list[int]]  # one column of samples per input (before / after)
    totals: list[int]
    pruned: int  # nodes left out
    min_share: float  # the widest left-out node's share at most
    elided: list[int]  # per column, samples shown under elided nodes
    elided_leafless: list[int]  # of those, the ones whose leaf is listed in elided_self only
    elided_self: ElidedSelf


class WallClock(TypedDict):
    """Where the strip's second 0 starts on the capture host's wall clock (report/seconds.py)."""

    t0: float  # epoch seconds
    offset: int  # the host's UTC offset, seconds
    zone: str
    exact: bool  # from run.json's clock (else run.json's start time, approximate)


class SecondCells(TypedDict):
    """Samples per (flame tree row, second), as three parallel arrays."""

    node: list[int]
    sec: list[int]
    n: list[int]


class SeriesRow(TypedDict):
    """A capture source's per-second series on the strip's seconds (None: not measured that second)."""

    name: str
    unit: str
    about: str
    values: list[float | None]


class _StripSeries(TypedDict, total=False):
    series: list[SeriesRow]  # the sources' shown series; absent when none (a report of an older run)


class SecondsStrip(_StripSeries):
    """The per-second strip: samples per second, the top finding's per second, the flame graph's cells."""

    first: int  # perf clock second of the strip's second 0
    n: list[int]
    untimed: int
    clock: WallClock | None
    top: list[int] | None  # the top finding's samples per second (None: no finding with stacks)
    top_title: str
    cells: SecondCells | None  # None: too many to embed

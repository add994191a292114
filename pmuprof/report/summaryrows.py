"""The report payload's summary rows: the Summary, the MySQL card and the first screen (the verdict), typed once.

Plain JSON data, embedded as it is in report.html; built by report/facts.py and report/verdict.py, read by the
template, report.md and report/cards.py."""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from ..findings.steps import FixStepJSON
from .rows import Check


class SemaphoreLatch(TypedDict):
    kind: str  # mutex, rw_shared, ... as SEMAPHORES names them
    spin_waits: int | None
    rounds: int | None
    os_waits: int | None


class SemaphoresRow(TypedDict):
    """The InnoDB SEMAPHORES section as the MySQL card shows it."""

    empty: bool
    os_wait_array: dict[str, int]
    latches: list[SemaphoreLatch]
    spin_rounds_per_wait: dict[str, float]


class ErrorLogRow(TypedDict):
    path: str | None
    memory_barrier: str | None  # the error log's barrier line, when it has one
    line: str | None


class MysqlUnread(TypedDict):
    """No server facts: why (no mysql.json, or the server could not be reached) and what was missing."""

    reachable: Literal[False]
    error: str
    missing: list[str]


class MysqlRead(TypedDict):
    """The server's facts as read: version, spin variables, SEMAPHORES, processlist states."""

    reachable: Literal[True]
    source: str
    version: str
    version_comment: str
    family: str
    variables: list[tuple[str, str]]  # the spin and concurrency variables read, in SPIN_VARIABLES order
    semaphores: SemaphoresRow | None
    threads: int | None
    states: list[tuple[str, int]]  # processlist states, most threads first
    threads_running: list[int]  # before and after, those read
    error_log: ErrorLogRow
    my_cpu_relax_multiplier: float | None
    missing: list[str]


MysqlFacts = MysqlUnread | MysqlRead


class LabelValue(TypedDict):
    """One line of a card: what (label) and its value in words."""

    label: str
    value: str


class TargetRow(TypedDict):
    """A target process of run.json as the summary shows it."""

    pid: int
    label: str
    comm: str
    exe: str
    build_id: str | None
    threads: int
    cgroup: str | None
    cpus_allowed: str
    frame_pointers: str  # likely | partial | absent | unknown
    samples: int | None


class HostRow(TypedDict):
    """The host facts the report shows (run.json host)."""

    hostname: str
    cpu_model: str
    microarch: str
    vendor: str
    nproc: int | None
    kernel: str
    hardware_pmu: bool | None
    perf_version: str
    perf_event_paranoid: int | None
    pfm_pmu: str


class PauseRow(TypedDict):
    cycles: float
    ns: float | None


class KeptProcess(TypedDict):
    """A process of the input, kept as a target or left out (analysis.json processes)."""

    label: str
    pid: int | None
    comm: str
    binary: str
    samples: int
    kept: bool


class FeatureOffRow(TypedDict):
    feature: str
    why: str
    fix: str


class _Throttled(TypedDict, total=False):
    frequency_requested: int  # -F as asked, only when perf used another rate (``frequency``)


class Summary(_Throttled):
    """What was profiled, how, on what host, and what went wrong along the way (report/facts.py summary)."""

    pmuprof_version: str  # that recorded the input
    report_version: str  # that wrote this report
    source: str
    command: list[str]
    started: str
    duration_s: float | None
    interrupted: bool
    mode: str
    processes: list[str]
    kept: list[KeptProcess]
    selection: str
    targets: list[TargetRow]
    host: HostRow
    pause: PauseRow | None
    event_requested: str
    event_recorded: str
    event_substituted: bool
    frequency: int | None
    call_graph: str
    samples: int
    samples_total: int | None
    lost: int | None
    unit: str
    perf_argv: list[str]
    warnings: list[str]
    features_off: list[FeatureOffRow]
    binaries: list[dict[str, Any]]  # analysis.json binaries with samples or a problem, as it writes them
    server_version: str
    trigger: str
    host_load: list[LabelValue]


class Caveats(TypedDict):
    """Host and capture caveats: short tags for the first screen's chip, the full lines behind it."""

    tags: list[str]
    lines: list[str]


class WaitingRow(TypedDict):
    """The note that an on-CPU capture saw a server mostly off the CPU (report/waiting.py)."""

    sentence: str
    command: str
    sessions: int
    busy_cpus: float


class RuleTitle(TypedDict):
    rule: str
    title: str


class InfoRow(TypedDict):
    rule: str
    title: str
    share: float


class BusyWords(TypedDict, total=False):
    """The healthy verdict's facts in words (findings/busiest.py ``Busiest``); {} when there are none, else
    every key ('' where there is nothing to say)."""

    function: str
    share: str
    link: str
    path_end: str
    path_share: str
    leaf: str
    leaf_kind: str
    leaf_share: str
    leaf_entry: str
    leaf_under: str
    leaf_via: str
    state: str
    state_share: str
    state_function: str
    sentence: str


class ConfidenceWords(TypedDict, total=False):
    """How sure, in words; {} when the finding has no confidence, else every key."""

    level: str
    samples: str
    margin: str
    checks: list[Check]


class HealthyVerdict(TypedDict):
    """The first screen when no finding is above info: the informational ones and where the time went."""

    caveats: Caveats
    findings: int
    healthy: Literal[True]
    info: list[InfoRow]
    hottest: str
    hottest_share: float
    link: str
    busy: BusyWords
    waiting: WaitingRow | None


class CauseVerdict(TypedDict):
    """The first screen's top cause: its headline, sentence, how sure, its fix and what it also explains."""

    caveats: Caveats
    findings: int
    healthy: Literal[False]
    rule: str
    severity: str
    title: str
    share: float
    process: str
    sentence: str
    basis: str
    confidence: ConfidenceWords
    fix: list[FixStepJSON]
    server: str
    who: str  # the process it is about: pid, endpoints, datadir, version (report/who.py)
    explains: list[RuleTitle]
    more: int
    frame: str
    link: str
    waiting: WaitingRow | None


Verdict = HealthyVerdict | CauseVerdict

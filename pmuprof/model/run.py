"""run.json as frozen types: what was asked for and what happened (targets, host, perf, warnings)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any
from collections.abc import Mapping

from .offcpu import OffCpu

RUN_SCHEMA = 2  # run.json "schema": 1 was 0.1's untyped dict (still read), 2 is this model
# Options whose value is a password or says where one is kept: never written to run.json or shown in a report.
SECRET_OPTIONS = ("--mysql-password-env", "--password", "--mysql-password")
REDACTED = "********"


def redact_command(argv: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """``argv`` with the value of every SECRET_OPTIONS option (``--opt VALUE`` or ``--opt=VALUE``) replaced."""
    out: list[str] = []
    for arg in argv:
        name, eq, _ = arg.partition("=")
        if out and out[-1] in SECRET_OPTIONS:
            out.append(REDACTED)
        else:
            out.append(f"{name}={REDACTED}" if eq and name in SECRET_OPTIONS else arg)
    return tuple(out)


@dataclass(frozen=True)
class Pause:
    """PAUSE latency measured on the capture host (rdtsc), or why it was not."""

    cycles: float | None = None
    ns: float | None = None
    tsc_hz: float | None = None
    tsc_hz_source: str = ""
    method: str = ""
    ticks_per_pause: float | None = None
    mariadb: Mapping[str, Any] = field(default_factory=dict)  # MariaDB my_cpu_init's calibration repeated
    error: str = ""


@dataclass(frozen=True)
class Host:
    hostname: str = ""
    cpu_model: str = ""
    vendor: str = ""
    family: int | None = None
    model: int | None = None
    stepping: int | None = None
    flags_hypervisor: bool | None = None
    microarch: str = ""
    pfm_pmu: str = ""
    hardware_pmu: bool | None = None
    kernel: str = ""
    nproc: int | None = None
    numa_nodes: Mapping[str, str] = field(default_factory=dict)  # node -> cpulist
    perf: str = ""
    perf_version: str = ""
    perf_event_paranoid: int | None = None
    is_root: bool | None = None
    zone_reclaim_mode: int | None = None
    numa_balancing: int | None = None
    pause: Pause | None = None


@dataclass(frozen=True)
class HostLoad:
    """How busy the whole host was while perf recorded, from /proc (what pt-stalk's vmstat and mpstat show):
    shares of all CPUs' time, the run queue (``procs_running``, pmuprof's own threads included) sampled
    once a second, and rates over the window. A value the kernel does not offer is None."""

    seconds: float = 0.0
    cpus: int = 0
    busy_share: float = 0.0  # user, nice, system, irq, softirq and steal over all CPU time
    targets_share: float | None = None  # the targets' own CPU time (all their threads) over all CPU time
    steal_share: float = 0.0
    iowait_share: float = 0.0
    runnable_avg: float = 0.0
    runnable_max: int = 0
    blocked_avg: float = 0.0  # procs_blocked: tasks in uninterruptible sleep (D), mostly I/O
    loadavg_1m: float | None = None  # at the end of the window
    context_switches_per_s: float = 0.0
    swap_in_pages_per_s: float | None = None
    swap_out_pages_per_s: float | None = None
    mem_available_min_bytes: int | None = None
    psi_cpu_some_share: float | None = None  # share of the window some runnable task waited for a CPU
    psi_memory_some_share: float | None = None
    interval_s: float | None = None  # how often /proc was read (None: a run from before it was said, read every 0.5 s)
    psi_cpu_full_share: float | None = None  # share of the window all non-idle tasks waited for a CPU (PSI cpu full)


@dataclass(frozen=True)
class CpuUser:
    """One process's, or one cgroup's, CPU time over the capture's window (/proc/PID/stat utime + stime)."""

    name: str  # the process's comm, or the cgroup's path
    cpu_s: float
    share: float  # of all CPUs' time over the window (1.0 = every CPU all the time)
    pid: int | None = None  # None for a cgroup
    cgroup: str = ""  # the process's cgroup (v2 path)
    target: bool = False  # a target of the capture (for a cgroup: one of the targets is in it)


@dataclass(frozen=True)
class CpuUsers:
    """Who used the CPUs while perf recorded (run.json cpu_users): every process's CPU time from /proc read at
    the window's start and end, the busiest processes and cgroups, and the targets' own share. Processes that
    ended inside the window are not counted (their time left /proc with them)."""

    seconds: float = 0.0
    cpus: int = 0
    processes: tuple[CpuUser, ...] = ()  # the busiest, then any target not among them
    cgroups: tuple[CpuUser, ...] = ()  # the busiest
    targets_share: float | None = None
    counted_share: float = 0.0  # all processes' CPU time seen over all CPUs' time
    seen: int = 0  # processes that used any CPU in the window


@dataclass(frozen=True)
class Numa:
    cpu_nodes: tuple[int, ...] = ()
    memory_pages: Mapping[str, int] = field(default_factory=dict)  # node -> pages of the target
    nodes_on_host: int | None = None


@dataclass(frozen=True)
class FileMap:
    """One executable file mapping of a live target (from /proc/PID/maps at capture start)."""

    start: int
    end: int
    pgoff: int
    path: str


@dataclass(frozen=True)
class BinaryFacts:
    """What a binary holds for naming frames (tools/elf.symbol_summary)."""

    machine: str = ""
    symtab: int = 0
    dynsym: int = 0
    debuginfo: bool = False
    gnu_debuglink: bool = False
    eh_frame: bool = False
    frame_pointer_ratio: float | None = None
    frame_pointers: str = "unknown"  # likely | partial | absent | unknown
    error: str = ""


@dataclass(frozen=True)
class Target:
    pid: int
    label: str
    comm: str = ""
    exe: str = ""
    build_id: str | None = None
    threads: int = 0
    cgroup: str | None = None
    cpus_allowed: str = ""
    numa: Numa | None = None
    is_mysqld: bool = False
    maps: tuple[FileMap, ...] = ()
    exe_note: str = ""
    symbols: BinaryFacts | None = None
    samples: int | None = None
    # a MySQL/MariaDB server's own endpoints ("socket /run/mysqld/mysqld.sock, tcp 127.0.0.1:3306") and datadir,
    # read from /proc at the capture's start: which server this is, on a host running several
    endpoints: str = ""
    datadir: str = ""


@dataclass(frozen=True)
class Record:
    """perf record: the argv that ran, the event asked for and the event(s) perf really recorded."""

    argv: tuple[str, ...] = ()
    event_requested: str = ""
    event_recorded: str = ""
    events_recorded: tuple[str, ...] = ()
    frequency: int | None = None  # the rate perf sampled at (perf.data's attr): perf lowers -F to the kernel's cap
    frequency_requested: int | None = None  # -F as asked, only when perf used another rate
    call_graph: str = ""  # fp | dwarf | lbr | "" (unknown)
    per_thread_roots: bool = False  # --per-thread-roots: the report folds with one frame per thread
    samples_total: int | None = None  # every sample in the file
    lost: int | None = None
    data_mb: float | None = None


@dataclass(frozen=True)
class Stat:
    argv: tuple[str, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)  # perf spelling -> pmuprof event name
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class FeatureOff:
    feature: str
    why: str = ""
    fix: str = ""


@dataclass(frozen=True)
class Poll:
    t: float
    values: Mapping[str, float | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Trigger:
    """Why `watch` took this capture: the condition, and the polled values around it."""

    condition: str
    source: str = ""
    pid: int | None = None  # the server whose polls held (the first target); absent before several servers
    cycles: int | None = None
    consecutive_hits: int | None = None
    capture_index: int | None = None
    max_captures: int | None = None
    cooldown_s: float | None = None
    conditions: tuple[str, ...] = ()
    fired_at: str = ""
    interval_s: float | None = None
    polls_before: tuple[Poll, ...] = ()
    polls_during: tuple[Poll, ...] = ()


@dataclass(frozen=True)
class Source:
    """Where the report's input came from: a run directory, a perf.data, a perf script text, a folded file."""

    kind: str = "rundir"
    path: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)  # a folded file's '# key: value' lines


@dataclass(frozen=True)
class KernelSymbols:
    """The recording boot's kernel text symbols, kept in the run directory (``file``, gzip'd kallsyms
    lines) so a report on another host or after a kernel change names kernel frames; ``why_not`` when not."""

    file: str = ""  # "" when not kept
    build_id: str = ""  # the kernel's build-id (/sys/kernel/notes), what perf.data's build-id table holds
    release: str = ""
    symbols: int = 0
    bytes: int = 0  # size of ``file`` on disk
    why_not: str = ""


@dataclass(frozen=True)
class KeptBinary:
    """One sampled user binary of the targets, copied into the run directory's archive (member ``build_id``)."""

    path: str  # as the target mapped it
    build_id: str
    bytes: int = 0  # the copy's size before compression
    debug_stripped: bool = False  # DWARF left out (objcopy --strip-debug): no inline frames when re-read elsewhere
    debug_file: str = ""  # its separate debug file's path (symbols only kept, member ``build_id`` + ".debug")


@dataclass(frozen=True)
class KeptBinaries:
    """What resolves the targets' sampled user binaries where they are not installed (what `perf archive`
    bundles): ``file`` a tar.gz of the copies, by build-id; ``skipped`` says which were not kept and why."""

    file: str = ""
    bytes: int = 0  # the archive's size on disk
    binaries: tuple[KeptBinary, ...] = ()
    skipped: tuple[str, ...] = ()


@dataclass(frozen=True)
class Clock:
    """The capture host's clocks read together once: CLOCK_MONOTONIC (perf's sample clock, so a sample's
    second maps to wall time: epoch_s + (t - monotonic_s)), the epoch, and the local UTC offset and zone
    name then (the time Grafana / PMM dashboards of that host show)."""

    monotonic_s: float
    epoch_s: float
    utc_offset_s: int = 0
    zone: str = ""


@dataclass(frozen=True)
class SourceRun:
    """What one capture source did (capture/lifecycle.py): the run-directory files it wrote, the per-second
    series it kept in series.json (model/series.py), and why it recorded nothing, when it did not."""

    name: str
    files: tuple[str, ...] = ()
    series: tuple[str, ...] = ()
    why_not: str = ""


@dataclass(frozen=True)
class Run:
    """run.json. A bare perf.data / text / folded input gets a Run with what its header tells."""

    pmuprof_version: str = ""
    schema: int = RUN_SCHEMA
    command: tuple[str, ...] = ()
    started: str = ""
    duration_s: float | None = None
    duration_requested_s: float | None = None
    interrupted: bool = False
    stopped_by: str = ""  # "", SIGINT, SIGTERM, SIGHUP, target-exit, disk
    mode: str = ""  # per-cpu | per-thread
    cgroup: str | None = None
    targets: tuple[Target, ...] = ()
    host: Host = field(default_factory=Host)
    record: Record = field(default_factory=Record)
    stat: Stat = field(default_factory=Stat)
    warnings: tuple[str, ...] = ()
    features_off: tuple[FeatureOff, ...] = ()
    trigger: Trigger | None = None
    source: Source = field(default_factory=Source)
    offcpu: OffCpu | None = None  # the off-CPU tracer's outcome (None: not asked for, or an older run)
    host_load: HostLoad | None = None  # how busy the host was while perf recorded (None: not a capture)
    cpu_users: CpuUsers | None = None  # who used the CPUs while perf recorded (None: not measured)
    kernel_symbols: KernelSymbols | None = None  # None: a run from before they were kept, or not a capture
    kept_binaries: KeptBinaries | None = None  # None: a run from before they were kept, or not a capture
    clock: Clock | None = None  # None: a run from before it was kept, or not a capture
    sources: tuple[SourceRun, ...] = ()  # the capture's sources in the order they started (empty: older runs)

    def __post_init__(self) -> None:
        object.__setattr__(self, "command", redact_command(self.command))  # written and read back redacted

    def with_notes(self, warnings: tuple[str, ...] = (), features_off: tuple[FeatureOff, ...] = ()) -> Run:
        """The same run with more warnings / features off (each said once)."""
        more_w = tuple(w for w in dict.fromkeys(warnings) if w not in self.warnings)
        more_f = tuple(f for f in features_off if f not in self.features_off)
        return replace(self, warnings=self.warnings + more_w, features_off=self.features_off + more_f)

    def target_for(self, label: str) -> Target | None:
        """The target a process label names (its label, comm, pid, or comm-pid)."""
        for t in self.targets:
            if label and label in (t.label, t.comm, str(t.pid), f"{t.comm}-{t.pid}"):
                return t
        return None

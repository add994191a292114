"""Pure builders of perf command lines (record, stat, script, evlist); unit-tested without perf."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# Fields pmuprof folds from: just enough for stacks and leaf offsets (much faster than defaults).
SCRIPT_FIELDS = "comm,pid,tid,ip,sym,symoff,dso"
TIMED_FIELDS = "comm,pid,tid,time,ip,sym,symoff,dso"  # the same, with each sample's time (the sample table)
# Sample times on CLOCK_MONOTONIC, the clock of Python's time.monotonic(): the processlist polled during
# the capture (capture/mysql/poll.py) is stamped with it, so a sample's second is the poll's second.
SAMPLE_CLOCK = "CLOCK_MONOTONIC"
DWARF_STACK_BYTES = 32768  # 8 KB default reaches thread roots in ~57 % of mysqld samples, 32 KB in ~99.7 %
STAT_SOFTWARE = ("task-clock", "context-switches", "cpu-migrations", "page-faults")
STAT_HARDWARE = ("cycles", "instructions")


@dataclass(frozen=True)
class RecordSpec:
    """What to record: mode per-cpu (-a, optionally -G cgroup) or per-thread (-p)."""

    output: Path
    pids: tuple[int, ...]
    frequency: int = 99
    call_graph: str = "fp"  # fp | dwarf | lbr
    mode: str = "per-cpu"  # per-cpu | per-thread
    event: str = "cycles"
    cgroup: str | None = None
    max_size_bytes: int | None = None
    user_sp: bool = False  # frame pointers only: each sample carries the user sp (--user-regs=sp, 16 bytes)


def call_graph_args(call_graph: str) -> list[str]:
    if call_graph == "fp":
        return ["-g"]
    if call_graph == "dwarf":
        return ["--call-graph", f"dwarf,{DWARF_STACK_BYTES}"]
    if call_graph == "lbr":
        return ["--call-graph", "lbr"]
    raise ValueError(f"unknown call-graph mode {call_graph!r}")


def record_argv(perf: str, spec: RecordSpec, control: list[str] | None = None) -> list[str]:
    """perf record runs until SIGINT; the caller times it (no `sleep` child to orphan).

    ``control`` (e.g. ``-D -1 --control fifo:CTL,ACK``) starts it disabled until the caller enables it.
    """
    argv = [
        perf,
        "record",
        "-F",
        str(spec.frequency),
        *call_graph_args(spec.call_graph),
        "-e",
        spec.event,
        "-k",
        SAMPLE_CLOCK,
        *(control or []),
    ]
    if spec.user_sp and spec.call_graph == "fp":
        argv.append("--user-regs=sp")
    if spec.mode == "per-cpu":
        argv.append("-a")
        if spec.cgroup:
            argv += ["-G", spec.cgroup]
    elif spec.mode == "per-thread":
        argv += ["-p", ",".join(str(p) for p in spec.pids)]
    else:
        raise ValueError(f"unknown mode {spec.mode!r}")
    if spec.max_size_bytes:
        argv += ["--max-size", f"{max(1, spec.max_size_bytes // 1024)}K"]
    argv += ["-o", str(spec.output)]
    return argv


def stat_argv(
    perf: str, output: Path | int, pids: tuple[int, ...], events: tuple[str, ...], mode: str, cgroup: str | None = None
) -> list[str]:
    """perf stat in CSV (-x,) into ``output``: a file, or a descriptor pmuprof opened (--log-fd: perf then opens
    nothing in the run directory). Per-cpu mode counts system-wide, or the target's cgroup when it has one."""
    where = ["--log-fd", str(output)] if isinstance(output, int) else ["-o", str(output)]
    argv = [perf, "stat", "-x", ",", *where, "-e", ",".join(events)]
    if mode == "per-thread":
        argv += ["-p", ",".join(str(p) for p in pids)]
    else:
        argv.append("-a")
        if cgroup:
            argv += ["-G", ",".join([cgroup] * len(events))]
    return argv


def script_argv(
    perf: str,
    data: Path,
    pids: tuple[int, ...] = (),
    comms: tuple[str, ...] = (),
    symfs: Path | None = None,
    timed: bool = False,
    kallsyms: Path | None = None,
) -> list[str]:
    """``kallsyms``: the recording boot's kernel symbols (a run directory's copy), used as given."""
    argv = [perf, "script", "-i", str(data), "-F", TIMED_FIELDS if timed else SCRIPT_FIELDS, "--no-inline"]
    if symfs is not None:
        argv.append(f"--symfs={symfs}")
    if kallsyms is not None:
        argv.append(f"--kallsyms={kallsyms}")
    if pids:
        argv.append("--pid=" + ",".join(str(p) for p in pids))
    elif comms:
        argv.append("--comms=" + ",".join(comms))
    return argv


def evlist_argv(perf: str, data: Path) -> list[str]:
    return [perf, "evlist", "-v", "-i", str(data)]


def buildid_list_argv(perf: str, data: Path, hits: bool = False) -> list[str]:
    """``hits``: only the DSOs samples fell in."""
    return [perf, "buildid-list", "-i", str(data)] + (["--with-hits"] if hits else [])


def header_argv(perf: str, data: Path) -> list[str]:
    return [perf, "report", "--header-only", "-i", str(data)]


def estimate_bytes(
    frequency: int, cpus: int, duration: float, call_graph: str, threads: int = 1, mode: str = "per-cpu"
) -> int:
    """Rough perf.data size: samples x bytes per sample (+ fixed overhead for mmap/comm records)."""
    per_sample = DWARF_STACK_BYTES + 400 if call_graph == "dwarf" else 600
    streams = cpus if mode == "per-cpu" else max(1, min(threads, cpus))
    return int(frequency * streams * duration * per_sample * 1.2) + 16 * 1024 * 1024

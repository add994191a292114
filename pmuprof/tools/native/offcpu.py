"""pmuprof-offcpu (the BPF off-CPU tracer): its command line and its output file, as data."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Iterable, Mapping, Sequence

from ...model.callers import Sample

MAX_TARGETS = 16  # native/offcpu/offcpu.h OFFCPU_MAX_TARGETS
# 2: ustack lines say how many callers the CFI unwinder recovered; 3: lazy mode; 4: the on-CPU sampler;
# 5: wake-ups (wait and short lines carry RUNQ_NS, open lines WAKE_NS)
FORMATS = ("1", "2", "3", "4", "5")
DEFAULT_MIN_BLOCK_US = 1000  # native/offcpu/offcpu.h OFFCPU_DEFAULT_MIN_BLOCK_US (benchmarks/RESULTS.md)


@dataclass(frozen=True)
class Limits:
    """Map sizes: threads tracked at once, distinct (thread, stack, state) entries, distinct stacks."""

    threads: int = 16384
    entries: int = 16384
    stacks: int = 8192
    min_block_us: int = DEFAULT_MIN_BLOCK_US  # lazy mode: shorter blocks are summed without stacks


@dataclass(frozen=True)
class Wait:
    """Off-CPU time summed in the kernel for one thread, stack pair and state."""

    tgid: int
    tid: int
    state: str  # R S D T ? or B (off the CPU since before the tracer attached)
    waits: int
    ns: int
    ustack: int  # user stack hash (key of ``ustacks``); 0: none
    kstack: int  # kernel stack id; below 0: -errno, not stored
    comm: str
    short: bool = False  # blocks under the tracer's min_block_us, summed without stacks
    runq_ns: int = 0  # of ns, the part after a wake-up: runnable, waiting for a CPU (format 5)


@dataclass(frozen=True)
class Open:
    """A thread still off the CPU when the tracer stopped: since when, with which stacks."""

    tgid: int
    tid: int
    state: str
    since_ns: int  # 0: off the CPU since before the window (seen first at its wake-up)
    ustack: int
    kstack: int
    wake_ns: int = 0  # when it was woken (0: still asleep): since then it waited for a CPU


@dataclass(frozen=True)
class TracerOutput:
    t0_ns: int = 0
    end_ns: int = 0
    stopped_by: str = ""
    limits: Mapping[str, int] = field(default_factory=dict)
    stats: Mapping[str, int] = field(default_factory=dict)
    waits: tuple[Wait, ...] = ()
    open: tuple[Open, ...] = ()
    stacks: Mapping[int, tuple[int, ...]] = field(default_factory=dict)  # kernel: id -> addresses, leaf first
    ustacks: Mapping[int, tuple[int, ...]] = field(default_factory=dict)  # user: hash -> addresses, leaf first
    scanned: frozenset[int] = frozenset()  # user stacks whose frame chain was found by scanning above sp
    # user stacks -> how many return addresses after the leaf the CFI unwinder put back (format 2)
    recovered: Mapping[int, int] = field(default_factory=dict)
    mode: str = "eager"  # format 3: "lazy" (stacks at switch-in, blocks of min_block_us or more) or "eager"
    min_block_us: int = 0
    # format 3: (tgid, tid) -> user stack hash of threads blocked for the whole window (walked at the end)
    idle: Mapping[tuple[int, int], int] = field(default_factory=dict)
    # format 4, with --sample-hz: the on-CPU sampler's stacks under a library leaf (model/callers.py), or why
    # it could not attach (the waits are traced all the same)
    sampled: tuple[Sample, ...] = ()
    sampler_off: str = ""
    # format 5: "on" when sched_wakeup was traced (blocks split into blocked and runnable after the wake-up),
    # "off" when not (--no-wakeup, or it could not attach: wakeup_off says why); "" in older formats
    wakeups: str = ""
    wakeup_off: str = ""

    def stack(self, stack_id: int) -> tuple[int, ...]:
        """A kernel stack's addresses (() when it was not stored)."""
        return self.stacks.get(stack_id, ()) if stack_id >= 0 else ()

    def ustack(self, stack_hash: int) -> tuple[int, ...]:
        """A user stack's addresses (() when none)."""
        return self.ustacks.get(stack_hash, ())


def argv(
    binary: Path | str,
    pids: Sequence[int],
    duration_s: float,
    out: Path,
    limits: Limits = Limits(),
    eager: bool = False,
    start_on_usr1: bool = False,
    sample_hz: int = 0,
    wakeups: bool = True,
) -> list[str]:
    """The tracer's command line (at most MAX_TARGETS pids; duration is its own hard bound). ``eager``:
    stacks for every block, taken at switch-out (exact, ~3 us a switch); else lazy where the kernel allows
    (stacks for blocks of ``limits.min_block_us`` or more, taken at switch-in). ``start_on_usr1``: attached,
    it counts nothing until SIGUSR1 (sent when perf starts recording: both windows start together).
    ``sample_hz``: also sample the targets on the CPU, for the callers perf's frame-pointer walk skips under
    a library leaf (``TracerOutput.sampled``). ``wakeups`` False leaves the sched_wakeup program out (blocks are
    not split into blocked and runnable after their wake-up)."""
    if not pids or len(pids) > MAX_TARGETS:
        raise ValueError(f"pmuprof-offcpu traces 1..{MAX_TARGETS} processes, not {len(pids)}")
    args = [str(binary)]
    for pid in pids:
        args += ["--pid", str(int(pid))]
    return (
        args
        + [
            "--duration",
            f"{duration_s:g}",
            "--out",
            str(out),
            "--threads",
            str(limits.threads),
            "--entries",
            str(limits.entries),
            "--stacks",
            str(limits.stacks),
            "--min-block-us",
            str(limits.min_block_us),
        ]
        + (["--eager"] if eager else [])
        + (["--start-on-usr1"] if start_on_usr1 else [])
        + (["--sample-hz", str(int(sample_hz))] if sample_hz > 0 else [])
        + ([] if wakeups else ["--no-wakeup"])
    )


def parse(lines: Iterable[str]) -> TracerOutput:
    """The tracer's output (native/offcpu/dump.c); ValueError when it is not that format."""
    head: dict[str, str] = {}
    limits: dict[str, int] = {}
    stats: dict[str, int] = {}
    waits: list[Wait] = []
    opens: list[Open] = []
    stacks: dict[int, tuple[int, ...]] = {}
    ustacks: dict[int, tuple[int, ...]] = {}
    scanned: set[int] = set()
    recovered: dict[int, int] = {}
    idle: dict[tuple[int, int], int] = {}
    sampled: list[Sample] = []
    runq = 0
    for n, raw in enumerate(lines, 1):
        parts = raw.rstrip("\n").split("\t")
        kind = parts[0]
        if n == 1 and (kind != "pmuprof-offcpu" or len(parts) != 2 or parts[1] not in FORMATS):
            raise ValueError(f"not a pmuprof-offcpu output file (format {' or '.join(FORMATS)})")
        if n == 1:
            runq = int(parts[1] in ("5",))  # format 5: one more column after NS (and after KSTACK in open)
        if kind == "wait" and len(parts) >= 9 + runq:
            waits.append(_wait(parts, runq))
        elif kind == "short" and len(parts) >= 7 + runq:
            waits.append(_short(parts, runq))
        elif kind == "idle" and len(parts) == 4:
            idle[(int(parts[1]), int(parts[2]))] = int(parts[3], 16)
        elif kind == "open" and len(parts) == 7 + runq:
            opens.append(
                Open(
                    int(parts[1]),
                    int(parts[2]),
                    parts[3],
                    int(parts[4]),
                    int(parts[5], 16),
                    int(parts[6]),
                    int(parts[7]) if runq else 0,
                )
            )
        elif kind == "stack" and len(parts) == 3:
            stacks[int(parts[1])] = _addresses(parts[2])
        elif kind == "ustack" and len(parts) in (4, 5):
            ustacks[int(parts[1], 16)] = _addresses(parts[3])
            if parts[2] == "1":
                scanned.add(int(parts[1], 16))
            if len(parts) == 5 and int(parts[4]) > 0:
                recovered[int(parts[1], 16)] = int(parts[4])
        elif kind == "sample" and len(parts) == 9:
            sampled.append(
                Sample(
                    int(parts[1]),
                    int(parts[4]),
                    _addresses(parts[6]),
                    int(parts[7]),
                    () if parts[8] == "-" else _addresses(parts[8]),
                    int(parts[2]),
                    int(parts[3], 16),
                )
            )
        elif kind == "stat" and len(parts) == 3:
            stats[parts[1]] = int(parts[2])
        elif kind == "limit" and len(parts) == 3:
            limits[parts[1]] = int(parts[2])
        elif len(parts) == 2:
            head[kind] = parts[1]
    if "pmuprof-offcpu" not in head:
        raise ValueError("empty pmuprof-offcpu output")
    return TracerOutput(
        int(head.get("t0_ns", 0)),
        int(head.get("end_ns", 0)),
        head.get("stopped_by", ""),
        limits,
        stats,
        tuple(waits),
        tuple(opens),
        stacks,
        ustacks,
        frozenset(scanned),
        recovered,
        head.get("mode", "eager"),
        int(head.get("min_block_us", 0)),
        idle,
        tuple(sampled),
        head.get("sampler_off", ""),
        head.get("wakeups", ""),
        head.get("wakeup_off", ""),
    )


def _wait(parts: list[str], runq: int) -> Wait:
    """A ``wait`` line: TGID TID STATE WAITS NS [RUNQ_NS] USTACK KSTACK COMM."""
    at = 6 + runq
    return Wait(
        int(parts[1]),
        int(parts[2]),
        parts[3],
        int(parts[4]),
        int(parts[5]),
        int(parts[at], 16),
        int(parts[at + 1]),
        "\t".join(parts[at + 2 :]),
        runq_ns=min(int(parts[6]), int(parts[5])) if runq else 0,
    )


def _short(parts: list[str], runq: int) -> Wait:
    """A ``short`` line: TGID TID STATE WAITS NS [RUNQ_NS] COMM."""
    return Wait(
        int(parts[1]),
        int(parts[2]),
        parts[3],
        int(parts[4]),
        int(parts[5]),
        0,
        -1,
        "\t".join(parts[6 + runq :]),
        short=True,
        runq_ns=min(int(parts[6]), int(parts[5])) if runq else 0,
    )


def _addresses(text: str) -> tuple[int, ...]:
    return tuple(int(a, 16) for a in text.split(",") if a)


def load(path: Path) -> TracerOutput:
    with open(path, encoding="utf-8", errors="backslashreplace") as fh:
        return parse(fh)

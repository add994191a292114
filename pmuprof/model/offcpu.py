"""Off-CPU capture as frozen types: run.json's "offcpu" outcome, threads.json, and both as a Profile's off-CPU part."""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Iterable, Mapping

import numpy as np

from .stacks import Stacks


@dataclass(frozen=True)
class OffCpu:
    """run.json ``offcpu``: whether off-CPU time was recorded, how, and what was lost or capped.

    ``total_us`` is all off-CPU time in offcpu.folded; ``before_us`` the part spent in waits that
    began before the tracer attached (their user stack is unknown, their kernel stack is the one
    /proc showed at the start). ``short_us`` is the part in blocks shorter than ``min_block_us`` (lazy
    mode: summed per thread and state without stacks, the frame ``[short blocks < 1 ms]``). ``lost`` counts the kernel's misses: switch-outs whose kernel or user
    stack was not stored, switch-outs not tracked (thread map full) and waits dropped (wait map full).
    """

    requested: bool = False
    recorded: bool = False
    why_not: str = ""
    mechanism: str = ""
    argv: tuple[str, ...] = ()
    returncode: int | None = None
    stopped_by: str = ""
    duration_s: float | None = None
    unit: str = "us"
    total_us: int = 0
    before_us: int = 0
    stacks: int = 0
    threads: int = 0
    switches: int | None = None
    user_stacks_scanned: int | None = None
    # distinct user stacks whose skipped callers (under a leaf without frame pointers) CFI recovered
    user_stacks_recovered: int | None = None
    mode: str = ""  # "lazy": stacks taken at switch-in for blocks of min_block_us or more; "eager": at every switch-out
    min_block_us: int = 0
    short_us: int = 0
    lost: Mapping[str, int] = field(default_factory=dict)
    limits: Mapping[str, int] = field(default_factory=dict)
    stderr: str = ""
    # The on-CPU sampler (model/callers.py): its rate (0: off), its ticks in a target thread, those whose
    # user leaf is in a library (stack kept), those whose callers were recovered (recovered-callers.tsv)
    # and those left out, not guessed: under a key whose stacks disagree, or one seen too seldom to trust
    sample_hz: int = 0
    sampled: int | None = None
    sampled_in_library: int | None = None
    callers_recovered: int | None = None
    callers_ambiguous: int | None = None
    callers_rare: int | None = None
    sampler_off: str = ""  # the sampler was asked for but could not attach: why
    # sched_wakeup traced: each block split into blocked (to the wake-up) and runnable after it (waiting for a
    # CPU, the ``off-cpu:W`` leaves, ``runnable_us`` in all); False in runs before it or with it off
    # (``wakeup_off`` says why when it could not attach): blocked time then includes the wait for a CPU
    wakeups: bool = False
    runnable_us: int | None = None
    wakeup_off: str = ""


@dataclass(frozen=True)
class ThreadGroup:
    """Threads of one process in the same state with the same stacks (frames root first)."""

    count: int
    state: str  # R S D T ... as /proc/TID/stat says
    tids: tuple[int, ...] = ()
    comms: Mapping[str, int] = field(default_factory=dict)  # thread name -> threads
    wchan: str = ""
    kernel: tuple[str, ...] = ()  # /proc/TID/stack, or the BPF kernel stack
    user: tuple[str, ...] = ()  # the BPF user stack of the thread's last switch-out, when recorded
    user_source: str = ""  # "bpf" (switched out during the capture), "" (not recorded)
    off_cpu_ms: float | None = None  # the longest time one of them had been off the CPU (BPF)
    # of those woken and not yet run at the end, the longest wait for a CPU since the wake-up (BPF sched_wakeup)
    runnable_ms: float | None = None


@dataclass(frozen=True)
class Snapshot:
    """What one process's threads were doing at one moment, read from /proc (and BPF maps) without stopping it."""

    when: str  # "start" | "end" of the capture
    at: str  # UTC time
    pid: int
    label: str
    threads: int = 0
    states: Mapping[str, int] = field(default_factory=dict)
    groups: tuple[ThreadGroup, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Threads:
    """threads.json: a snapshot at the capture's start and one at its end, per target."""

    snapshots: tuple[Snapshot, ...] = ()


@dataclass(frozen=True)
class OffCpuProfile:
    """A run's off-CPU time: offcpu.folded as Stacks (counts in microseconds, every stack ending in a
    ``off-cpu:STATE`` frame, roots the same process labels as the on-CPU stacks) and threads.json."""

    stacks: Stacks
    threads: Threads = field(default_factory=Threads)
    headers: Mapping[str, str] = field(default_factory=dict)  # the folded file's '# key: value' lines

    def __post_init__(self) -> None:
        if not isinstance(self.stacks, Stacks):
            object.__setattr__(self, "stacks", Stacks.of(self.stacks))

    @property
    def total_us(self) -> int:
        return self.stacks.total

    def restrict(self, roots: Iterable[str]) -> OffCpuProfile:
        """Only the stacks and snapshots of the given process labels."""
        keep = set(roots)
        st = self.stacks.take(np.isin(self.stacks.root_ids, [self.stacks.root_id(r) for r in keep]))
        snaps = tuple(s for s in self.threads.snapshots if s.label in keep)
        return OffCpuProfile(st, Threads(snaps), self.headers)

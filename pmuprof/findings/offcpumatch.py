"""Off-CPU matchers: blocked time (microseconds) per stack pattern, thread state and latch, for one process.

An ``offcpu`` evidence reads the run's offcpu.folded (Profile.offcpu) the way ``stack`` and ``latch``
read the on-CPU samples: the same patterns and the same latch attribution (the state leaf removed, a
sleeping latch waiter is attributed like a spinning one). Its value is the average number of threads
blocked there during the capture (time blocked / capture time); it also gives the time itself, its
share of the process's off-CPU time, and how many threads the start/end snapshots (threads.json)
found in that wait.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from collections.abc import Mapping

import numpy as np

from ..model.labels import BLOCKED_STATES, KERNEL_SUFFIX, RUNNABLE_STATES, parse_state
from ..model.offcpu import Snapshot
from ..model.profile import Profile
from ..model.stacks import Stacks
from .evidence import Blocked, Summarized
from .latches import Attributor, WaitTable, attribute
from .patterns import PatternSet, frame_names
from .stackmatch import StackIndex, match_latch, match_stack
from .stackshare import OffCpuTime

NO_OFFCPU = "no off-CPU time recorded (capture with --off-cpu)"


class OffCpuIndex:
    """One process's off-CPU stacks, with sub-indexes per thread-state filter and one without the state
    leaf (for latch attribution); every share is of the process's whole off-CPU time."""

    def __init__(self, profile: Profile | None, process: str, attributor: Attributor | None) -> None:
        off = profile.offcpu if profile is not None else None
        self.available = off is not None
        self.process = process
        self.attributor = attributor
        st = Stacks.of({})
        if off is not None:
            st = off.stacks.take(off.stacks.root_ids == off.stacks.root_id(process))
        self.st = st
        self.total_us = st.total
        self.states = (
            np.array([parse_state(f) or "" for f in st.frames], dtype=object)[st.leaf_ids]
            if len(st)
            else np.zeros(0, dtype=object)
        )
        self.duration_us = _duration_us(profile, off.headers if off else {})
        self.snapshots: tuple[Snapshot, ...] = (
            tuple(s for s in off.threads.snapshots if s.label == process) if off else ()
        )
        self.woken = bool(len(self.states)) and bool((self.states == "W").any())
        self._sub: dict[frozenset[str], StackIndex] = {}
        self._bare: StackIndex | None = None

    def _index(self, stacks: Stacks) -> StackIndex:
        index = StackIndex(None, self.process, self.attributor, stacks)
        index.total = self.total_us  # shares of all the process's off-CPU time, whatever the filter
        return index

    def with_states(self, states: frozenset[str]) -> StackIndex:
        hit = self._sub.get(states)
        if hit is None:
            keep = np.isin(self.states, list(states)) if states else np.ones(len(self.st), dtype=bool)
            hit = self._sub[states] = self._index(self.st.take(keep))
        return hit

    def bare(self) -> StackIndex:
        """The blocked stacks without their state leaf: a sleeping waiter's leaf is its futex or condition wait.
        Time waiting for a CPU (R preempted, W woken and not yet run) is no latch wait."""
        if self._bare is None:
            summed: dict[tuple[str, ...], int] = {}
            for stack, n in self.st.items():
                state = parse_state(stack[-1])
                if state in RUNNABLE_STATES:
                    continue
                key = stack[:-1] if state else stack
                summed[key] = summed.get(key, 0) + n
            self._bare = self._index(Stacks.of(summed))
        return self._bare


def offcpu_index(index: StackIndex) -> OffCpuIndex:
    """The off-CPU stacks of ``index``'s process, built once per process beside its on-CPU index."""
    return index.built("offcpu", lambda: OffCpuIndex(index.profile, index.process, index.attributor))


def _duration_us(profile: Profile | None, headers: Mapping[str, str]) -> float | None:
    """How long the tracer ran: run.json offcpu.duration_s, else the folded file's duration_s header."""
    run_off = profile.run.offcpu if profile is not None else None
    seconds = run_off.duration_s if run_off is not None and run_off.duration_s else None
    if seconds is None:
        try:
            seconds = float(str(headers.get("duration_s", "")).split()[0])
        except (ValueError, IndexError):
            seconds = None
    return seconds * 1e6 if seconds and seconds > 0 else None


def match_offcpu(index: StackIndex, spec: Mapping[str, Any], skip: PatternSet, missing: list[str]) -> OffCpuTime | None:
    """Blocked time matching a stack spec (plus ``states``) or a latch spec; None without off-CPU data."""
    off = offcpu_index(index)
    if not off.available:
        missing.append(NO_OFFCPU)
        return None
    if "latches" in spec:
        found = match_latch(off.bare(), spec)
    else:
        found = match_stack(
            off.with_states(spec.get("states", frozenset())), {k: v for k, v in spec.items() if k != "states"}, skip
        )
    us = found.count
    if off.duration_us is None:
        missing.append("the off-CPU capture's duration is unknown (run.json offcpu.duration_s)")
    avg = us / off.duration_us if off.duration_us else None
    return OffCpuTime(
        value=avg,
        share=found.share,
        count=found.count,
        hot=found.hot,
        hot_share=found.hot_share,
        callers=found.callers,
        chain=found.chain,
        chains=found.chains,
        latch=found.latch,
        rows=None,  # rows of another table than the samples
        us=us,
        ms=round(us / 1e3, 1),
        seconds=round(us / 1e6, 3),
        total_us=off.total_us,
        avg_threads=avg,
        threads=_threads_seen(off, spec),
        runnable_us=_runnable_us(off, spec, skip),
    )


def _runnable_us(off: OffCpuIndex, spec: Mapping[str, Any], skip: PatternSet) -> int:
    """Of the stacks a blocked-time spec matches, the time after their wake-ups (``off-cpu:W``: runnable,
    waiting for a CPU), which the spec leaves out; 0 for latch specs and captures without wake-ups."""
    if "latches" in spec or not (set(spec.get("states") or ()) & BLOCKED_STATES) or "W" in (spec.get("states") or ()):
        return 0
    if not off.woken:
        return 0
    found = match_stack(off.with_states(frozenset("W")), {k: v for k, v in spec.items() if k != "states"}, skip)
    return int(found.count)


def _threads_seen(off: OffCpuIndex, spec: Mapping[str, Any]) -> int | None:
    """The most threads one snapshot (start or end of the capture) found in a matching stack and state;
    None when no snapshot recorded user stacks."""
    if "latches" in spec or not any(g.user for s in off.snapshots for g in s.groups):
        return None
    wanted: PatternSet = spec["inclusive"] if "inclusive" in spec else spec["self"]
    states = spec.get("states") or frozenset()
    best = 0
    for snap in off.snapshots:
        count = 0
        for group in snap.groups:
            frames = tuple(group.user) + tuple(f + KERNEL_SUFFIX for f in group.kernel)
            if frames and (not states or group.state in states) and _holds(spec, wanted, frame_names(frames)):
                count += group.count
        best = max(best, count)
    return best


def _holds(spec: Mapping[str, Any], wanted: PatternSet, names: Any) -> bool:
    if not wanted.mask(names).any():
        return False
    if "inside" in spec and not spec["inside"].mask(names).any():
        return False
    return not ("not_inside" in spec and spec["not_inside"].mask(names).any())


@dataclass(frozen=True, eq=False)
class OffCpuWaitLatches(Summarized, Blocked):
    """Which latches the off-CPU time was spent waiting for (seconds blocked, by latch)."""

    value: float | None  # threads blocked on average
    us: int
    seconds: float
    share: float  # of the off-CPU time
    summary: str
    top: str
    top_seconds: float
    chain: str
    rules: str


def offcpu_wait_latches(facts: Any, index: StackIndex, missing: list[str]) -> OffCpuWaitLatches | None:
    """Which latches the process's sleeping waiters wait for: the on-CPU latch attribution applied to the
    off-CPU stacks that went through latch machinery (a sync-array sleep under rw_lock_s_lock_spin is the
    same latch as the spin). Plain condition-variable and event sleeps (idle threads, commits waiting for
    the redo flush) have no machinery frame and are not latch waits."""
    off = offcpu_index(index)
    if not off.available:
        missing.append(NO_OFFCPU)
        return None
    bare = off.bare()
    table = bare.waits()
    keep = [i for i, wait in enumerate(table.waits) if wait.types]
    picked = WaitTable(
        table.rows[keep],
        tuple(table.waits[i] for i in keep),
        tuple(table.latch[i] for i in keep),
        tuple(table.mode[i] for i in keep),
        table.counts[keep],
    )
    rows = attribute(picked, off.total_us, bare.attributor.latches if bare.attributor else {})
    waited = int(picked.counts.sum())
    duration = off.duration_us
    top = rows[0] if rows else None
    return OffCpuWaitLatches(
        waited / duration if duration else None,
        waited,
        round(waited / 1e6, 3),
        waited / off.total_us if off.total_us else 0.0,
        ", ".join(f"{_short(r.name)} {r.count / 1e6:.2f} s" for r in rows[:4]),
        _short(top.name) if top else "",
        round(top.count / 1e6, 3) if top else 0.0,
        top.chain_text(top.chains[0]) if top and top.chains else "",
        ", ".join(dict.fromkeys(r.rule for r in rows[:4] if r.rule)),
    )


def _short(name: str) -> str:
    """A latch row's name without its explanation or the acquirer's argument list."""
    return re.sub(r"\([^()]*\)$", "", name.split(" (")[0])

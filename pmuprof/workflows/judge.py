"""Judge one run against earlier ones: CPU time per second per sampled CPU, beyond sampling noise.

A share can grow while nothing got slower (a fix removes a spin and everything else's share rises),
so a function's or finding's weight is its samples times what one sample stands for: the share of
the sampled CPUs' time, 1 / (frequency × duration × CPUs sampled), or the target's measured CPU time
over its samples when perf stat counted the target's threads. A change is judged against the median
of the earlier runs; it counts when it is larger than the sampling noise (95 %, report/noise.py)
and material: at least LOAD_POINTS of the sampled CPUs' time and a RELATIVE part of the median.
Runs with no time basis (no duration or CPU count) fall back to shares with the same noise test.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import TypeVar
from collections.abc import Callable, Sequence

from ..capture.proc.process import parse_cpulist
from ..model.counters import Counters
from ..model.run import Run
from ..report.noise import outside, rate_noise, share_change

T = TypeVar("T")

LOAD_POINTS = 0.02  # a change under 2 % of the sampled CPUs' time is not flagged
RELATIVE = 0.20  # nor one under a fifth of the median of the earlier runs
SHARE_POINTS = 0.05  # without a time basis: 5 points of share, as before


@dataclass(frozen=True)
class Basis:
    """What one sample of a run stands for, as a fraction of the sampled CPUs' time (None: not known)."""

    unit: float | None
    cpus: int | None
    text: str  # how it was computed, or why it could not be


@dataclass(frozen=True)
class Measure:
    """One function or finding in one run: its samples, the run's samples, and the run's basis."""

    count: float
    total: int
    unit: float | None

    @property
    def load(self) -> float | None:
        return self.count * self.unit if self.unit is not None else None

    @property
    def share(self) -> float:
        return self.count / self.total if self.total else 0.0


@dataclass(frozen=True)
class Judgement:
    direction: str  # regression | improvement
    basis: str  # cpu | share
    now: float
    baseline: float
    noise: float  # half-width of the 95 % interval of the change

    @property
    def delta(self) -> float:
        return self.now - self.baseline


def cpus_sampled(run: Run) -> int | None:
    """All CPUs for a system-wide (per-cpu) recording, else the CPUs the targets may run on."""
    if run.mode != "per-cpu":
        allowed: set[int] = set()
        for t in run.targets:
            allowed |= parse_cpulist(t.cpus_allowed or "")
        if allowed:
            return len(allowed)
    return run.host.nproc or None


def run_basis(run: Run, counters: Counters | None, samples: int) -> Basis:
    """The run's time basis: task-clock of the target's threads when counted, else frequency × duration × CPUs."""
    cpus, duration, freq = cpus_sampled(run), run.duration_s, run.record.frequency
    if not samples or not cpus or not duration:
        return Basis(None, cpus, "no duration or CPU count recorded: judged on shares")
    task_ms = counters.value("task-clock") if counters and counters.scope == "target threads" else None
    if task_ms:
        return Basis(
            task_ms / 1000 / samples / (duration * cpus),
            cpus,
            f"target CPU time {task_ms / 1000:.1f} s (task-clock) over {duration:g} s × {cpus} CPUs",
        )
    if not freq:
        return Basis(None, cpus, "no sampling frequency recorded: judged on shares")
    return Basis(1 / (freq * duration * cpus), cpus, f"{freq} Hz × {duration:g} s × {cpus} CPUs")


def _nearest(earlier: Sequence[T], value: float, key: Callable[[T], float]) -> T:
    return min(reversed(earlier), key=lambda m: abs(key(m) - value))


def judge(now: Measure, earlier: Sequence[Measure]) -> Judgement | None:
    """A regression or improvement of ``now`` over the median of ``earlier``; None when neither."""
    timed = [(m, unit) for m in earlier if (unit := m.unit) is not None]
    if now.unit is not None and timed:
        load = now.count * now.unit  # Measure.load, known here
        median = statistics.median(m.count * unit for m, unit in timed)
        ref, ref_unit = _nearest(timed, median, lambda mu: mu[0].count * mu[1])
        noise = rate_noise(ref.count, ref_unit, now.count, now.unit)
        delta = load - median
        real = abs(delta) > noise and abs(delta) >= LOAD_POINTS and abs(delta) >= RELATIVE * median
        return Judgement("regression" if delta > 0 else "improvement", "cpu", load, median, noise) if real else None
    if not earlier:
        return None
    median = statistics.median(m.share for m in earlier)
    ref = _nearest(earlier, median, lambda m: m.share)
    low, high = share_change(ref.count, ref.total or 1, now.count, now.total or 1)
    delta = now.share - median
    real = outside((low, high)) and abs(delta) >= SHARE_POINTS and (delta > 0) == (low > 0)
    noise = (high - low) / 2
    return Judgement("regression" if delta > 0 else "improvement", "share", now.share, median, noise) if real else None


def describe(name: str, j: Judgement, cpus: int | None, runs: int) -> str:
    """'ut_delay: 6.8 % of 2 CPUs vs median 18.1 % of 1 earlier run (−11.3 points, noise ±2.5)'."""
    of = f"of {cpus} CPUs" if j.basis == "cpu" and cpus else "of samples"
    return (
        f"{name}: {100 * j.now:.1f} % {of} vs median {100 * j.baseline:.1f} % of {runs} earlier "
        f"run{'s' if runs > 1 else ''} ({100 * j.delta:+.1f} points, sampling noise ±{100 * j.noise:.1f})"
    )

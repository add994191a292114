"""Stack-share evidence: the samples (or off-CPU time) whose stacks a ``stack``, ``latch`` or ``offcpu`` matcher
matched, with their caller chains and, for latch waits, the modes and the candidates of an "A or B"."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from .evidence import Blocked, Evidence, pct


@dataclass(frozen=True)
class Chain:
    """One hot frame with its nearest callers, and the samples' share there."""

    frames: tuple[str, ...]  # hot frame first
    share: float
    text: str  # 'hot 35.0% ← caller ← caller'

    def to_json(self) -> dict[str, Any]:
        return {"frames": list(self.frames), "share": self.share, "text": self.text}


@dataclass(frozen=True)
class Alternative:
    """One "A or B" the stacks could not tell apart, with its samples."""

    latches: tuple[str, ...]
    names: str  # 'page latch or index tree latch'
    share: float
    count: int

    def to_json(self) -> dict[str, Any]:
        return {"latches": list(self.latches), "names": self.names, "share": self.share, "count": self.count}


@dataclass(frozen=True)
class Candidate:
    """A latch one of the ambiguous waits may be for (rules/knowledge/latches.yaml)."""

    latch: str
    name: str
    words: str
    rule: str
    ps_name: str

    def to_json(self) -> dict[str, Any]:
        return {"latch": self.latch, "name": self.name, "words": self.words, "rule": self.rule, "ps_name": self.ps_name}


@dataclass(frozen=True)
class Ambiguity:
    """The waits a ``latch: {ambiguous: true}`` matcher counts: which alternatives, which candidate latches."""

    alternatives: tuple[Alternative, ...]  # most samples first
    candidates: tuple[Candidate, ...]
    names: str  # the candidates in words: 'page latch or index tree latch'
    title: str  # the same, capitalised
    key: str  # the commonest alternative's latch key ('a|b')
    split: str  # each alternative with its share, in words
    rules: str  # the rules of the candidates: 'a and b'
    ps_names: str  # their performance_schema instrument names, '; '-separated

    def to_json(self) -> dict[str, Any]:
        return {
            "alternatives": [a.to_json() for a in self.alternatives],
            "candidates": [c.to_json() for c in self.candidates],
            "names": self.names,
            "title": self.title,
            "key": self.key,
            "split": self.split,
            "rules": self.rules,
            "ps_names": self.ps_names,
        }


@dataclass(frozen=True)
class LatchDetail:
    """What a latch match adds to its share: the wait modes and kinds (samples each), and an ambiguity."""

    modes: Mapping[str, int]  # most samples first
    mode: str  # the commonest ('' when no mode is known)
    kinds: Mapping[str, int]  # spin | os_wait | futex | ...
    modes_text: str  # 'X 80%, S 20%', or 'not known'
    ambiguity: Ambiguity | None = None

    @property
    def ambiguous(self) -> bool:
        """Whether it counts waits the stack attributes to one of several latches."""
        return self.ambiguity is not None and bool(self.ambiguity.alternatives)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "modes": dict(self.modes),
            "mode": self.mode,
            "kinds": dict(self.kinds),
            "modes_text": self.modes_text,
        }
        return out | (self.ambiguity.to_json() if self.ambiguity is not None else {})


@dataclass(frozen=True, eq=False, kw_only=True)
class StackMatch(Evidence):
    """What every stack-share value holds: the share, the hot frame, its callers and the top chains.

    ``rows`` (rows of the process's on-CPU Stacks) is for grouping and never written."""

    share: float
    count: int  # samples (off-CPU: microseconds)
    hot: str | None  # None when nothing matched
    hot_share: float | None = None  # None when nothing matched
    callers: tuple[str, ...] = ()
    chain: str = ""
    chains: tuple[Chain, ...] = ()  # most samples first
    latch: LatchDetail | None = None  # a latch match's modes, kinds and ambiguity
    rows: npt.NDArray[np.int64] | None = field(default=None, repr=False)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value, "share": self.share, "count": self.count, "hot": self.hot}
        if self.hot_share is not None:
            out["hot_share"] = self.hot_share
        out.update(callers=list(self.callers), chain=self.chain, chains=[c.to_json() for c in self.chains])
        return out | (self.latch.to_json() if self.latch is not None else {})

    def counted(self) -> int | None:
        return self.count

    def chain_texts(self) -> tuple[str, ...]:
        return tuple(c.text for c in self.chains) if self.count else ()

    def words(self, share: bool) -> str:
        """'35.0 % of samples (1,234 samples)', with the latch modes when known."""
        if not self.count:
            return "none (0 samples)"
        text = f"{pct(self.share)} of samples ({self.count:,} samples)"
        modes = self.latch.modes_text if self.latch is not None else ""
        return text + (f"; modes: {modes}" if modes and modes != "not known" else "")


@dataclass(frozen=True, eq=False, kw_only=True)
class StackShare(StackMatch):
    """Samples whose stack matched (a ``stack`` or ``latch`` matcher): ``value`` is their share; ``own``: the
    samples of pmuprof's own connections left out of it (``without_own``)."""

    value: float
    own: int = 0

    def to_json(self) -> dict[str, Any]:
        return super().to_json() | ({"own_left_out": self.own} if self.own else {})


@dataclass(frozen=True, eq=False, kw_only=True)
class StackPart(StackShare):
    """A stack share that is also a part of other samples: the matched ones over those holding an ``of`` frame."""

    of_share: float | None = None  # None when no sample holds an ``of`` frame

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "of_share": self.of_share}


@dataclass(frozen=True, eq=False, kw_only=True)
class OffCpuTime(StackMatch, Blocked):
    """Off-CPU time blocked where an ``offcpu`` matcher matched; ``count`` is µs, ``value`` the threads
    blocked on average (None when the capture's duration is unknown)."""

    value: float | None
    us: int = 0
    ms: float = 0.0
    seconds: float = 0.0
    total_us: int = 0
    avg_threads: float | None = None
    threads: int | None = None  # threads seen there in the start/end snapshots
    # the same stacks' time after their wake-ups (runnable, waiting for a CPU): not counted as blocked
    runnable_us: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            **super().to_json(),
            "us": self.us,
            "ms": self.ms,
            "seconds": self.seconds,
            "total_us": self.total_us,
            "avg_threads": self.avg_threads,
            "threads": self.threads,
            **({"runnable_us": self.runnable_us} if self.runnable_us else {}),  # a capture that traced wake-ups
        }

    def words(self, share: bool) -> str:
        """Seconds blocked, threads blocked on average, share of the off-CPU time."""
        if not self.us:
            return "none (0 µs off-CPU)"
        avg = self.avg_threads
        text = f"{self.us / 1e6:,.3f} s blocked" + (
            f" = {avg:.2f} threads on average" if isinstance(avg, float) else ""
        )
        text += f"; {pct(self.share)} of the off-CPU time"
        if self.runnable_us:
            text += f"; {self.runnable_us / 1e6:,.3f} s more after wake-ups waiting for a CPU, not counted"
        return text + (f"; {self.threads} thread(s) in it at the start or end" if self.threads else "")

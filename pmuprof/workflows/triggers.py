"""Trigger language and the pt-stalk-style state machine of `pmuprof watch` (pure, no I/O)."""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field, replace
from typing import Any
from collections.abc import Callable

from ..errors import UsageError

OPS = {
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}
SYNTAX = "NAME OP NUMBER, e.g. 'Threads_running>50', 'state:statistics>=10', 'command:Query>40', 'cpu>80'"
_COND = re.compile(r"^\s*(?P<lhs>.+?)\s*(?P<op>>=|<=|==|!=|>|<)\s*(?P<num>.+?)\s*$")
_STATUS_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)$")
_STATE_NAME = re.compile(r"^[A-Za-z0-9 _./:()-]+$")
_SIZE = re.compile(r"^(\d+(?:\.\d+)?)\s*([KMGTP]?)(i?B?)?$", re.IGNORECASE)
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?$")


@dataclass(frozen=True)
class Condition:
    """One trigger condition: ``source`` is status | state | command | cpu."""

    source: str
    name: str
    op: str
    threshold: float
    text: str

    @property
    def slug(self) -> str:
        """A file-name-safe label, e.g. ``Threads_running-gt-50``."""
        words = {">": "gt", ">=": "ge", "<": "lt", "<=": "le", "==": "eq", "!=": "ne"}
        name = re.sub(r"[^A-Za-z0-9_]+", "_", self.name).strip("_") or self.source
        num = f"{self.threshold:g}".replace(".", "_").replace("-", "m")
        return f"{name}-{words[self.op]}-{num}"


def parse_condition(text: str) -> Condition:
    """Parse one condition strictly; raise UsageError with a one-line reason otherwise."""
    match = _COND.match(text or "")
    if not match:
        raise UsageError(
            f"trigger {text!r}: expected {SYNTAX}", "quote the trigger in the shell: --trigger 'Threads_running>50'"
        )
    lhs, op, num = match.group("lhs"), match.group("op"), match.group("num")
    if not _NUMBER.match(num):
        raise UsageError(f"trigger {text!r}: {num!r} is not a number", "use a plain number such as 50 or 0.5")
    threshold = float(num)
    if lhs.lower() == "cpu":
        if threshold < 0:
            raise UsageError(f"trigger {text!r}: CPU % cannot be negative", "use e.g. 'cpu>80' (100 = one core)")
        return Condition("cpu", "cpu", op, threshold, text.strip())
    prefix, sep, rest = lhs.partition(":")
    if sep:
        source = prefix.strip().lower()
        if source not in ("state", "command"):
            raise UsageError(
                f"trigger {text!r}: unknown prefix {prefix!r}", "use state:NAME, command:NAME, cpu or a status variable"
            )
        name = rest.strip()
        if not name or not _STATE_NAME.match(name):
            raise UsageError(
                f"trigger {text!r}: bad processlist {source} {name!r}", "e.g. state:statistics or 'state:Sending data'"
            )
        return Condition(source, name, op, threshold, text.strip())
    if not _STATUS_NAME.match(lhs):
        raise UsageError(f"trigger {text!r}: {lhs!r} is not a status variable name", SYNTAX)
    return Condition("status", lhs, op, threshold, text.strip())


def parse_size(text: str) -> int:
    """``1G``, ``500M``, ``1.5GiB``, ``4096`` → bytes (powers of 1024)."""
    match = _SIZE.match(str(text).strip())
    if not match:
        raise UsageError(f"size {text!r}: expected a number with an optional K/M/G/T suffix", "e.g. 500M or 5G")
    power = " KMGTP".index(match.group(2).upper() or " ")
    return int(float(match.group(1)) * 1024**power)


def parse_duration(text: str) -> float:
    """``1s``, ``500ms``, ``5m``, ``2h``, ``7d``, ``10`` (seconds) → seconds."""
    match = _DURATION.match(str(text).strip())
    if not match:
        raise UsageError(
            f"duration {text!r}: expected a number with an optional ms/s/m/h suffix", "e.g. 1s, 500ms or 5m"
        )
    scale = {"ms": 0.001, "s": 1, None: 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]
    return float(match.group(1)) * scale


@dataclass(frozen=True)
class DiskFloor:
    """Free-space floor: ``bytes`` or ``percent`` of the filesystem must stay free."""

    bytes: int = 0
    percent: float = 0.0

    @classmethod
    def parse(cls, texts: tuple[str, ...]) -> DiskFloor:
        """Each text is a size (``1G``) or a percent (``5%``); the strictest of each kind wins."""
        floor = cls()
        for text in texts:
            text = text.strip()
            if text.endswith("%"):
                pct = text[:-1].strip()
                if not _NUMBER.match(pct) or not 0 <= float(pct) < 100:
                    raise UsageError(f"--disk-free {text!r}: percent must be 0..99", "e.g. --disk-free 5%")
                floor = replace(floor, percent=max(floor.percent, float(pct)))
            else:
                floor = replace(floor, bytes=max(floor.bytes, parse_size(text)))
        return floor

    def violation(self, free: int, total: int) -> str | None:
        """Why a capture must not start now, or None when there is room."""
        if free < self.bytes:
            return f"only {free // 2**20} MiB free, floor is {self.bytes // 2**20} MiB"
        if total > 0 and 100.0 * free / total < self.percent:
            return f"only {100.0 * free / total:.1f}% free, floor is {self.percent:g}%"
        return None


class FloorLog:
    """Says that captures are skipped under the disk floor once, and again only when that changes (another
    floor is the one not met, or the disk is back above it): a trigger that keeps firing on a full disk
    would otherwise log a line every poll."""

    def __init__(self, log: Callable[[str], None]) -> None:
        self.log, self.floor, self.skipped = log, "", 0

    def said(self, fire: Fire, reason: str | None) -> None:
        if not reason:
            if self.floor:
                self.log(f"free disk is back above the floor: trigger {fire.condition.text} captures again")
            self.floor = ""
            return
        self.skipped += 1
        floor = reason.rpartition("floor is ")[2]
        if floor != self.floor:
            self.log(
                f"trigger {fire.condition.text} fired but capture skipped: {reason} "
                "(said once: captures are skipped until the disk is above the floor again)"
            )
        self.floor = floor


@dataclass(frozen=True)
class Poll:
    """One cheap observation: status counters, processlist state/command counts, mysqld CPU %, and the
    host's 1-minute load average and run queue (procs_running, procs_blocked)."""

    t: float
    status: dict[str, float] = field(default_factory=dict)
    states: dict[str, int] = field(default_factory=dict)
    commands: dict[str, int] = field(default_factory=dict)
    cpu: float | None = None
    load1: float | None = None
    running: int | None = None
    blocked: int | None = None

    def to_dict(self, conditions: tuple[Condition, ...]) -> dict[str, Any]:
        """The values the conditions look at, for run.json."""
        return {"t": round(self.t, 3), "values": {c.text: value(c, self) for c in conditions}}


def value(cond: Condition, poll: Poll) -> float | None:
    """The number the condition compares, or None when the poll lacks it (e.g. CPU unknown)."""
    if cond.source == "cpu":
        return None if poll.cpu is None else round(poll.cpu, 2)
    if cond.source == "status":
        return poll.status.get(cond.name)
    table = poll.states if cond.source == "state" else poll.commands
    want = cond.name.lower()
    return float(sum(n for k, n in table.items() if (k or "").lower() == want))


def holds(cond: Condition, poll: Poll) -> bool:
    got = value(cond, poll)
    return got is not None and not math.isnan(got) and OPS[cond.op](got, cond.threshold)


def missing_status(conditions: tuple[Condition, ...], poll: Poll) -> list[str]:
    """Status variables the conditions name that the server does not have."""
    return [c.name for c in conditions if c.source == "status" and c.name not in poll.status]


@dataclass(frozen=True)
class WatchPlan:
    """What fires a capture (any condition true for ``cycles`` consecutive polls) and the caps."""

    conditions: tuple[Condition, ...]
    cycles: int = 5
    cooldown_s: float = 300.0
    max_captures: int | None = 1  # None: unlimited (pt-stalk's --iterations default); the disk floor still holds
    keep_polls: int = 10  # polls kept for run.json (at least ``cycles``)

    def __post_init__(self) -> None:
        if not self.conditions:
            raise UsageError("no trigger given", "add --trigger 'Threads_running>50'")
        if self.cycles < 1 or (self.max_captures is not None and self.max_captures < 1) or self.cooldown_s < 0:
            raise UsageError(
                "--cycles and --max-captures must be >= 1, --cooldown >= 0", "e.g. --cycles 3 --max-captures 3"
            )


@dataclass(frozen=True)
class WatchState:
    hits: tuple[int, ...] = ()
    window: tuple[Poll, ...] = ()
    captures: int = 0
    cooldown_until: float = float("-inf")


@dataclass(frozen=True)
class Fire:
    """A decision to capture now: which condition, after how many polls, with the recent values."""

    condition: Condition
    hits: int
    polls: tuple[Poll, ...]
    capture_index: int

    def to_dict(self, plan: WatchPlan) -> dict[str, Any]:
        return {
            "condition": self.condition.text,
            "source": self.condition.source,
            "cycles": plan.cycles,
            "consecutive_hits": self.hits,
            "capture_index": self.capture_index,
            "max_captures": plan.max_captures,
            "cooldown_s": plan.cooldown_s,
            "conditions": [c.text for c in plan.conditions],
            "polls_before": [p.to_dict(plan.conditions) for p in self.polls],
        }


def initial_state(plan: WatchPlan) -> WatchState:
    return WatchState(hits=(0,) * len(plan.conditions))


def step(plan: WatchPlan, state: WatchState, poll: Poll) -> tuple[WatchState, Fire | None]:
    """Feed one poll; return the new state and a Fire when a capture must start now.

    Polls during the cooldown are kept in the window but do not count towards ``cycles``;
    nothing fires once ``max_captures`` captures were taken.
    """
    keep = max(plan.keep_polls, plan.cycles)
    window = (state.window + (poll,))[-keep:]
    if done(plan, state) or poll.t < state.cooldown_until:
        return replace(state, hits=(0,) * len(plan.conditions), window=window), None
    hits = tuple(h + 1 if holds(c, poll) else 0 for c, h in zip(plan.conditions, state.hits))
    new = replace(state, hits=hits, window=window)
    for cond, count in zip(plan.conditions, hits):
        if count >= plan.cycles:
            return new, Fire(cond, count, window, state.captures + 1)
    return new, None


def captured(plan: WatchPlan, state: WatchState, ended_at: float) -> WatchState:
    """After a capture (or a skipped one) ends: count it and start the cooldown."""
    return replace(
        state, captures=state.captures + 1, hits=(0,) * len(plan.conditions), cooldown_until=ended_at + plan.cooldown_s
    )


def skipped(plan: WatchPlan, state: WatchState, now: float) -> WatchState:
    """A fire that could not capture (disk floor): cool down without counting a capture."""
    return replace(state, hits=(0,) * len(plan.conditions), cooldown_until=now + plan.cooldown_s)


def done(plan: WatchPlan, state: WatchState) -> bool:
    return plan.max_captures is not None and state.captures >= plan.max_captures


def of_max(plan: WatchPlan, n: int) -> str:
    """'n/max', or 'n' when the number of captures is unlimited."""
    return f"{n}/{plan.max_captures}" if plan.max_captures is not None else str(n)


def status_line(plan: WatchPlan, state: WatchState, poll: Poll) -> str:
    """One line per poll for -v: each condition's value and its consecutive-hit count."""
    clock = time.strftime("%H:%M:%S", time.localtime(poll.t))
    parts = []
    for cond, hits in zip(plan.conditions, state.hits):
        got = value(cond, poll)
        shown = "?" if got is None else f"{got:g}"
        parts.append(f"{cond.text}: {shown} ({hits}/{plan.cycles})")
    tail = ""
    if done(plan, state):
        tail = " · done"
    elif poll.t < state.cooldown_until:
        tail = f" · cooling down {state.cooldown_until - poll.t:.0f} s"
    return f"{clock} " + "; ".join(parts) + f" · captures {of_max(plan, state.captures)}{tail}"


def parse_proc_stat(text: str) -> tuple[int, int]:
    """(utime + stime clock ticks, starttime) from /proc/PID/stat; comm may hold spaces and ')'."""
    rest = text[text.rindex(")") + 2 :].split()
    # fields after comm start at field 3 (state); utime=14, stime=15, starttime=22
    return int(rest[11]) + int(rest[12]), int(rest[19])


def cpu_percent(prev_ticks: int, prev_t: float, ticks: int, t: float, hz: int) -> float | None:
    """CPU % between two readings (100 = one core busy); None when no time passed."""
    if t <= prev_t or ticks < prev_ticks:
        return None
    return 100.0 * (ticks - prev_ticks) / hz / (t - prev_t)

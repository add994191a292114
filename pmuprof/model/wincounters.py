"""The server's counters over the capture window, as one view whichever file they came from.

``WindowCounters.of(status, facts)`` reads status.json (model/status.py: the status once a second over the
capture) when the run has it, else mysql.json's ``status`` (model/server.StatusFacts: one read before and one
after its first seconds), so a rule asks the same questions of both: a counter's ``delta`` and ``rate`` over
the window, a ``ratio`` of deltas, a level's ``growth``, its value at either ``edge``, the ``peak`` second,
the seconds it rose (``rising``), and the per-second values (``per_second``). Counters are totals since the
server started: a reading lower than the one before it (FLUSH STATUS, a restart) drops that interval. What
pmuprof's own connections added to the per-session counters (status.json ``own``) is taken out of every
delta and rate of those counters; ``own`` says how much. mysql.json's two reads were made by a pmuprof that did
not measure its own statements: ``estimated_own`` is what they add at most (FACTS_OWN, POLL_OWN).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from collections.abc import Mapping, Sequence

from .server import StatusFacts
from .status import HISTORY_NAMES, InnodbState, OwnTraffic, ServerStatus, is_level

EDGES = ("first", "last")
MIN_INTERVAL_S = 0.5  # a per-second rate is over at least this long (shorter intervals join a neighbour)
Names = str | Sequence[str]  # one counter, or several summed (``("Sort_scan", "Sort_range")``)

# What a capture adds to the counters inside mysql.json's status interval (a run without status.json, whose
# connections did not measure their own session status), per statement it sends there. Measured with `pmuprof
# capture -d 8` of an idle server: in a 5.0 s interval 10.11.19 gained 6-7 on-disk temporary tables, 8-9 temporary
# tables and 6-7 Com_select, 10.2.11 6-8, 8-10 and 6-8 (5-6 polls); these bounds cover both:
# - once, the server facts: SHOW GLOBAL VARIABLES, SHOW ENGINE INNODB STATUS, the processlist
#   (information_schema.PROCESSLIST), the tablespaces (information_schema.INNODB_SYS_TABLESPACES), the closing
#   SHOW GLOBAL STATUS;
# - once a second, the processlist poller on MariaDB: information_schema.PROCESSLIST, an on-disk (Aria)
#   temporary table each.
FACTS_OWN: Mapping[str, float] = {"Created_tmp_disk_tables": 2, "Created_tmp_tables": 4, "Com_select": 2}
POLL_OWN: Mapping[str, float] = {"Created_tmp_disk_tables": 1, "Created_tmp_tables": 1, "Com_select": 1}


def _number(value: object) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def _numbers(values: Mapping[str, object]) -> dict[str, float]:
    return {k: n for k, v in values.items() if (n := _number(v)) is not None}


def _names(names: Names) -> tuple[str, ...]:
    return (names,) if isinstance(names, str) else tuple(names)


@dataclass(frozen=True)
class WindowCounters:
    """Readings of the server's status over one window: ``times`` (CLOCK_MONOTONIC, or 0 and the interval for
    mysql.json), ``seconds`` (the whole second of each reading), the values that changed per reading
    (``changed``) and every numeric value at the first and last reading."""

    source: str  # "status.json" or "mysql.json"
    times: tuple[float, ...]
    seconds: tuple[int | None, ...]
    first: Mapping[str, float]
    last: Mapping[str, float]
    changed: Mapping[str, tuple[float | None, ...]] = field(default_factory=dict)
    own_traffic: tuple[OwnTraffic, ...] = ()
    start: InnodbState | None = None
    end: InnodbState | None = None

    @classmethod
    def of(
        cls, status: ServerStatus | None, facts: StatusFacts | None = None, own: OwnTraffic | None = None
    ) -> WindowCounters | None:
        """From status.json when it has two polls or more, else from mysql.json's status (``own``: what the
        capture's statements added to it, ``estimated_own``); None without either."""
        if status is not None and len(status.polls) >= 2:
            return cls.from_status(status)
        if facts is not None and facts.before and facts.after and (facts.interval_s or 0) > 0:
            return cls.from_facts(facts, own)
        return None

    @classmethod
    def from_status(cls, status: ServerStatus) -> WindowCounters:
        return cls(
            "status.json",
            tuple(p.t for p in status.polls),
            tuple(p.second for p in status.polls),
            _numbers(status.first),
            _numbers(status.last),
            status.values,
            status.own,
            status.state("start"),
            status.state("end"),
        )

    @classmethod
    def from_facts(cls, facts: StatusFacts, own: OwnTraffic | None = None) -> WindowCounters:
        """mysql.json's two reads: the first seconds of the capture only; pmuprof's own statements in them were
        not measured, ``own`` (``estimated_own``) is taken out instead."""
        first, last = _numbers(facts.before), _numbers(facts.after)
        changed = {k: (first.get(k), v) for k, v in last.items() if first.get(k) != v}
        span = float(facts.interval_s or 0.0)
        mine = (own,) if own is not None else ()
        return cls("mysql.json", (0.0, span), (None, None), first, last, changed, mine)

    # the window
    @property
    def span(self) -> float:
        """Seconds from the first reading to the last."""
        return self.times[-1] - self.times[0] if len(self.times) > 1 else 0.0

    @property
    def per_second(self) -> bool:
        """Whether the readings are once a second (status.json), not two ends of a few seconds (mysql.json)."""
        return self.source == "status.json"

    def has(self, name: str) -> bool:
        return name in self.last or name in self.first or name in self.changed

    def names(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.first) | set(self.last) | set(self.changed)))

    def value_at(self, edge: str, name: str) -> float | None:
        """A counter's or level's value at the first or last reading."""
        if edge not in EDGES:
            raise ValueError(f"edge must be one of {EDGES}, not {edge!r}")
        return (self.first if edge == "first" else self.last).get(name)

    def values(self, name: str) -> tuple[float | None, ...]:
        """Its value at every reading (None: not read then)."""
        if name in self.changed:
            return self.changed[name]
        value = self.first.get(name, self.last.get(name))
        return (value,) * len(self.times) if value is not None else (None,) * len(self.times)

    # counters
    def delta(self, names: Names) -> float | None:
        """How much a counter (or several, summed) rose over the window, pmuprof's own statements taken out;
        None for a level or a name the server does not have."""
        total = 0.0
        for name in _names(names):
            steps = self._steps(name)
            if steps is None:
                return None
            total += max(0.0, sum(raw - own for _s, _dt, raw, own in steps))
        return total

    def rate(self, names: Names) -> float | None:
        """Per second over the window (the intervals a reset dropped left out)."""
        total = 0.0
        for name in _names(names):
            steps = self._steps(name)
            if steps is None:
                return None
            took = sum(dt for _s, dt, _raw, _own in steps)
            total += max(0.0, sum(raw - own for _s, _dt, raw, own in steps)) / took if took > 0 else 0.0
        return total

    def ratio(self, numerator: Names, denominator: Names) -> float | None:
        """delta(numerator) / delta(denominator); None when either is unknown or the denominator did not move."""
        top, bottom = self.delta(numerator), self.delta(denominator)
        if top is None or not bottom:
            return None
        return top / bottom

    def own(self, name: str) -> float:
        """What pmuprof's own connections added to this counter over the window (taken out of delta and rate)."""
        if len(self.times) < 2:
            return 0.0
        return self._own(name, self.times[0], self.times[-1])

    # levels (and counters alike)
    def growth(self, name: str) -> float | None:
        """Last value − first value, as read (a level's change; a counter's raw rise, own statements included)."""
        a, b = self.first.get(name), self.last.get(name)
        return None if a is None or b is None else b - a

    def peak(self, name: str) -> float | None:
        """The highest per-second rate of a counter, or the highest reading of a level."""
        points = [v for _s, v in self.per_second_values(name)]
        return max(points) if points else None

    def mean(self, name: str) -> float | None:
        """A level's average over the readings (a counter's: its rate)."""
        if not is_level(name):
            return self.rate(name)
        points = [v for v in self.values(name) if v is not None]
        return sum(points) / len(points) if points else None

    def rising(self, name: str) -> float | None:
        """The share of intervals in which the value rose (a history list that purge cannot shrink rises in
        almost every second); None with fewer than two readings of it."""
        points = [v for v in self.values(name) if v is not None]
        pairs = list(zip(points, points[1:]))
        return sum(b > a for a, b in pairs) / len(pairs) if pairs else None

    def per_second_values(self, name: str) -> tuple[tuple[int | None, float], ...]:
        """(second, value) per reading: a counter's rate over the interval ending there (own statements taken
        out; an interval under MIN_INTERVAL_S, such as the one before the poll that ends the window, is joined
        to its neighbour), a level's reading."""
        if is_level(name):
            return tuple((s, v) for s, v in zip(self.seconds, self.values(name)) if v is not None)
        return tuple((s, max(0.0, raw - own) / dt) for s, dt, raw, own in _merged(self._steps(name) or []) if dt > 0)

    # InnoDB
    def history_length(self, edge: str) -> float | None:
        """The history list length at an edge: the status variable, else InnoDB's metric, else the end state's."""
        for name in HISTORY_NAMES:
            value = self.value_at(edge, name)
            if value is not None:
                return value
        state = self.start if edge == "first" else self.end
        return float(state.history_length) if state is not None and state.history_length is not None else None

    def history_name(self) -> str | None:
        """Which HISTORY_NAMES this server has."""
        return next((n for n in HISTORY_NAMES if self.has(n)), None)

    # the arithmetic
    def _steps(self, name: str) -> list[tuple[int | None, float, float, float]] | None:
        """(second, duration, increase, pmuprof's own part of it) per interval between readings; None for a
        level or an unknown name. An interval whose value fell (a reset) or was not read is left out. The own
        part is where pmuprof's polls fell; the window's sum of it is exact, one interval's is close."""
        if is_level(name) or not self.has(name):
            return None
        values = self.values(name)
        out = []
        for i in range(1, len(self.times)):
            a, b = values[i - 1], values[i]
            if a is None or b is None or b < a:
                continue
            t0, t1 = self.times[i - 1], self.times[i]
            out.append((self.seconds[i], t1 - t0, b - a, self._own(name, t0, t1)))
        return out

    def _own(self, name: str, t0: float, t1: float) -> float:
        return sum(own.within(name, t0, t1) for own in self.own_traffic)


def estimated_own(family: str, interval_s: float | None, polls: int | None = None) -> OwnTraffic:
    """What the capture's own statements added inside mysql.json's status interval, at most: the server facts'
    queries, and on MariaDB the processlist poller's, one a second, at most one more than the interval has whole
    seconds (``polls``: fewer when processlist.tsv says the poller made fewer in all). A run without
    processlist.tsv is taken to have had the poller: what it would have added is an upper bound, so a rate that
    pmuprof's own statements could explain never counts as the load's."""
    own = dict(FACTS_OWN)
    if family == "mariadb":
        n = math.ceil(interval_s or 0.0) + 1
        n = min(n, polls) if polls is not None else n
        for name, per_poll in POLL_OWN.items():
            own[name] = own.get(name, 0.0) + per_poll * n
    # one poll at the interval's end: the window's one interval holds all of it (OwnTraffic.within)
    return OwnTraffic("estimated", (float(interval_s or 0.0),), 0, own)


Step = tuple[int | None, float, float, float]  # second, duration, increase, pmuprof's own part


def _merged(steps: list[Step]) -> list[Step]:
    """Steps with every one shorter than MIN_INTERVAL_S joined to the next (the last such to the one before),
    keeping the later second: a rate over a fifth of a second is mostly noise and edge effects."""
    out: list[Step] = []
    pending: Step | None = None
    for step in steps:
        if pending is not None:
            step = (step[0], step[1] + pending[1], step[2] + pending[2], step[3] + pending[3])
            pending = None
        if step[1] < MIN_INTERVAL_S:
            pending = step
        else:
            out.append(step)
    if pending is not None:
        if out:
            last = out.pop()
            pending = (pending[0], last[1] + pending[1], last[2] + pending[2], last[3] + pending[3])
        out.append(pending)
    return out

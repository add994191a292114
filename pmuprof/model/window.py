"""The server's counters over the capture's window: one typed view with delta, rate, ratio, level and growth.

Rules read the server through this view and never through a file's shape. It is built from what a run
directory holds: mysql.json's SHOW GLOBAL STATUS before and after the status interval (the first seconds of the
capture, ``from_status``) and the processlist polls (``Activity``); a per-second collector builds the same view
with one point a second (``CounterWindow(points=...)``), so every rule reads either the same way.

A counter's delta is the load's own: what pmuprof's own statements added inside the window (``own``, e.g. the
on-disk temporary table each ``information_schema.PROCESSLIST`` read makes on MariaDB) is subtracted, and a
counter that went down (FLUSH STATUS, a restart) has no delta. A gauge (``Threads_running``,
``Innodb_history_list_length``, ``Open_tables``) is read as levels: last, lowest, highest, growth.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from collections.abc import Iterable, Mapping

from .processlist import Polled
from .server import ServerFacts, StatusFacts

POLLER_SQL_IS = "information_schema.PROCESSLIST"  # what pmuprof's processlist poller read on MariaDB (poll.py)

# What pmuprof's own capture adds to the counters inside mysql.json's status interval, per statement it sends
# there (docs/rules.md "Server counters"). Measured with `pmuprof capture -d 8` of an idle server: in a 5.0 s
# interval 10.11.19 gained 6-7 on-disk temporary tables, 8-9 temporary tables and 6-7 Com_select, 10.2.11 6-8,
# 8-10 and 6-8 (5-6 polls); these bounds cover both, and tests/integration/test_incidents_*.py's healthy load
# checks on all three servers that no counter rule fires on them:
# - once, the server facts: SHOW GLOBAL VARIABLES, SHOW ENGINE INNODB STATUS, the processlist
#   (information_schema.PROCESSLIST), the tablespaces (information_schema.INNODB_SYS_TABLESPACES), the closing
#   SHOW GLOBAL STATUS;
# - once a second, the processlist poller on MariaDB: information_schema.PROCESSLIST, an on-disk (Aria)
#   temporary table each.
FACTS_OWN: Mapping[str, float] = {"Created_tmp_disk_tables": 2, "Created_tmp_tables": 4, "Com_select": 2}
POLL_OWN: Mapping[str, float] = {"Created_tmp_disk_tables": 1, "Created_tmp_tables": 1, "Com_select": 1}


def _number(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            out = float(value.strip())
        except ValueError:
            return None
        return out if math.isfinite(out) else None
    return None


def numeric(values: Mapping[str, object]) -> dict[str, float]:
    """The numeric values of a status snapshot (ON/OFF and text values are not counters)."""
    return {k: n for k, v in values.items() if (n := _number(v)) is not None}


@dataclass(frozen=True)
class Point:
    """The server's status at ``t`` seconds into the window."""

    t: float
    values: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Activity:
    """The processlist over the window: in which polls threads were in each state or ran each statement.

    ``states`` and ``statements`` map a state (``altering table``) or a statement's first words, upper-case
    (``ALTER TABLE SBTEST2``), to the poll (second) of every thread seen so: one entry per thread per poll."""

    polls: int = 0
    states: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    statements: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    source: str = ""

    @classmethod
    def of_polled(cls, polled: Polled, polls: int | None = None) -> Activity:
        """From processlist.tsv; ``polls``: the seconds the poller measured (its series), else those with rows."""
        seconds = polled.seconds.tolist()
        states = [polled.value("state", i) for i in range(len(polled))]
        kinds = [statement_kind(polled.value("digest", i)) for i in range(len(polled))]
        n = max(polls or 0, len(set(seconds)))
        return cls(n, _by_key(seconds, states), _by_key(seconds, kinds), f"processlist.tsv, {n} polls")

    @classmethod
    def of_snapshot(cls, states: Mapping[str, int]) -> Activity:
        """From mysql.json's one processlist snapshot (states only)."""
        return cls(1, {s: (0,) * int(n) for s, n in states.items() if n}, {}, "mysql.json processlist, one poll")

    def share(self, names: Iterable[str], table: str = "states") -> tuple[float, float]:
        """(share of polls with a thread in one of ``names``, such threads a poll on average); a name matches
        whole, case-insensitively, or as a prefix when it ends in ``*``."""
        rows = self.states if table == "states" else self.statements
        wanted = [n.lower() for n in names]
        hits = [v for k, v in rows.items() if any(_matches(k.lower(), w) for w in wanted)]
        if not self.polls:
            return 0.0, 0.0
        polls = len({second for hit in hits for second in hit})
        return min(1.0, polls / self.polls), sum(len(hit) for hit in hits) / self.polls


def _matches(key: str, wanted: str) -> bool:
    return key.startswith(wanted[:-1]) if wanted.endswith("*") else key == wanted


def statement_kind(digest: str) -> str:
    """A statement's first three words, upper-case: 'ALTER TABLE SBTEST2', 'SELECT DISTINCT C'."""
    return " ".join(digest.split()[:3]).upper()


def _by_key(seconds: list[int], keys: list[str]) -> dict[str, tuple[int, ...]]:
    out: dict[str, list[int]] = {}
    for second, key in zip(seconds, keys):
        if key:
            out.setdefault(key, []).append(second)
    return {k: tuple(sorted(v)) for k, v in sorted(out.items())}


@dataclass(frozen=True)
class Transaction:
    """A transaction the server listed (information_schema.INNODB_TRX), when the capture recorded one."""

    thread: int | None = None  # the connection id (trx_mysql_thread_id)
    trx_id: str = ""
    age_s: float | None = None  # seconds since trx_started at the window's end
    state: str = ""  # RUNNING, LOCK WAIT, ...
    isolation: str = ""
    statement: str = ""  # its statement digest ("" when idle in the transaction)


@dataclass(frozen=True)
class CounterWindow:
    """The server's counters over ``seconds`` of the capture: at least two points, oldest first."""

    points: tuple[Point, ...]
    own: Mapping[str, float] = field(default_factory=dict)  # what pmuprof's statements added over the window
    source: str = ""  # where the points come from, in words
    activity: Activity | None = None
    oldest: Transaction | None = None  # the oldest transaction at the window's end

    def __post_init__(self) -> None:
        if len(self.points) < 2:
            raise ValueError("a counter window needs two points")

    @property
    def seconds(self) -> float:
        return self.points[-1].t - self.points[0].t

    def has(self, name: str) -> bool:
        return name in self.points[0].values and name in self.points[-1].values

    def delta(self, name: str) -> float | None:
        """How much a counter grew over the window, pmuprof's own part subtracted (None: not there, or reset)."""
        if not self.has(name):
            return None
        raw = self.points[-1].values[name] - self.points[0].values[name]
        return None if raw < 0 else max(0.0, raw - self.own.get(name, 0.0))

    def rate(self, name: str) -> float | None:
        """A counter's delta per second."""
        d = self.delta(name)
        return d / self.seconds if d is not None and self.seconds > 0 else None

    def ratio(self, numerator: str, denominator: str) -> float | None:
        """Two counters' deltas divided (None when the denominator did not move)."""
        n, d = self.delta(numerator), self.delta(denominator)
        return n / d if n is not None and d else None

    def levels(self, name: str) -> list[float]:
        """A gauge's values at the points that have it."""
        return [p.values[name] for p in self.points if name in p.values]

    def growth(self, name: str) -> float | None:
        """A gauge's last value less its first."""
        return self.points[-1].values[name] - self.points[0].values[name] if self.has(name) else None

    def rising_share(self, name: str) -> float | None:
        """The share of the intervals between points in which a gauge rose."""
        values = self.levels(name)
        steps = [b - a for a, b in zip(values, values[1:])]
        return sum(1 for s in steps if s > 0) / len(steps) if steps else None

    @classmethod
    def from_status(
        cls, status: StatusFacts, own: Mapping[str, float] | None = None, activity: Activity | None = None
    ) -> CounterWindow | None:
        """mysql.json's two SHOW GLOBAL STATUS snapshots (None when it has no interval)."""
        if not status.interval_s or not status.before or not status.after:
            return None
        points = (Point(0.0, numeric(status.before)), Point(float(status.interval_s), numeric(status.after)))
        source = f"SHOW GLOBAL STATUS before and after the first {status.interval_s:g} s of the capture"
        return cls(points, dict(own or {}), source, activity)


def capture_own(server: ServerFacts, activity: Activity | None) -> dict[str, float]:
    """What pmuprof's own statements added inside mysql.json's status interval: the server facts' queries, and
    on MariaDB the processlist poller's (one a second, each an on-disk temporary table): at most one more poll
    than the interval has whole seconds, fewer when processlist.tsv says the poller made fewer in all. A run
    directory without processlist.tsv is taken to have had the poller: what it would have added is an upper
    bound, and a rate that pmuprof's own statements could explain never counts as the load's."""
    own = dict(FACTS_OWN)
    if server.server.family != "mariadb":
        return own
    polls = math.ceil(server.status.interval_s or 0.0) + 1
    if activity is not None and activity.source.startswith("processlist.tsv"):
        polls = min(polls, activity.polls)
    for name, n in POLL_OWN.items():
        own[name] = own.get(name, 0.0) + n * polls
    return own


def window_of(server: ServerFacts | None, activity: Activity | None) -> CounterWindow | None:
    """The window a run directory gives: mysql.json's status interval with the processlist polls (or its one
    snapshot); None without server facts."""
    if server is None or not server.reachable:
        return None
    if activity is None and server.processlist is not None:
        activity = Activity.of_snapshot(server.processlist.states)
    return CounterWindow.from_status(server.status, capture_own(server, activity), activity)

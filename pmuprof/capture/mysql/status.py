"""The server's counters once a second during a capture (status.json, series ``status.*``), and InnoDB's
transactions and purge at its start and end.

A per-second source (capture/persecond.py) on its own connection, proven to reach the target pid
(connect.py). Each poll reads the whole global status and a few INNODB_METRICS counters (the history length
and deadlocks where the status lacks them); the first poll also reads the connection's session status, the
last one reads it again, so what this source sent is known exactly (capture/mysql/session.py), and so is
what the processlist poller sent (it stops first and says so in ``ctx.window.own_sql``); the server
facts' one-off reads, which no session status measures, are done before the first poll (at most
ONE_OFF_WAIT_S is waited for them). Before the first poll and after the last, the InnoDB state
(innodbstate.py). Bounded: every answer within QUERY_TIMEOUT_S
(else the connection is dropped), SLOW_POLLS reads slower than SLOW_S in a row make it stop to spare the
server, the end state gets END_BUDGET_S; stopping it never waits more than ``join_s``. Nothing is changed
on the server; no statement text is kept but digests.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymysql

from ...model import rundir
from ...model.series import Series
from ...model.server import ServerVersion, server_family
from ...model.status import HISTORY, HISTORY_NAMES, KEYS, InnodbState, OwnTraffic, Poll, ServerStatus
from ...model.wincounters import WindowCounters
from ..lifecycle import Context, Part
from ..persecond import Measure, PerSecond
from . import innodbstate, session
from .connect import MysqlOptions, connect, scrub
from .parse import version_tuple

QUERY_TIMEOUT_S = 5.0  # one answer may take this long; a longer one drops the connection and ends collection
SLOW_S = 1.0  # a status read slower than this ...
SLOW_POLLS = 5  # ... this many times in a row: collection stops, to spare a struggling server
END_BUDGET_S = 3.0  # the end state's statements start at most this long after collection was told to stop
ONE_OFF_WAIT_S = 10.0  # the first poll waits at most this long for the server facts' one-off reads to be done
METRICS = ("trx_rseg_history_len", "lock_deadlocks", "lock_timeouts", "lock_threads_waiting")


class GaveUp(Exception):
    """Collection stopped on purpose (the server answered too slowly)."""


@dataclass(frozen=True)
class Reading:
    t: float  # when the reads began, CLOCK_MONOTONIC (the server computes the status right then)
    ms: float  # how long the reads took
    values: dict[str, str]


class ServerCounters(PerSecond):
    name = "status"
    measures = tuple(Measure(f"status.{k.name}", k.unit, k.about, k.show) for k in KEYS)
    join_s = 2 * QUERY_TIMEOUT_S  # the last poll, its session read and the end state, on a slow server
    phase = 0.25  # a quarter into each second: the processlist poller's reads (at the half) fall between two of its

    def __init__(self, opts: MysqlOptions, pid: int | None, path: Path, **kw: Any) -> None:
        super().__init__(**kw)
        self.opts, self.pid, self.path = opts, pid, path
        self._conn: Any = None
        self._secrets: list[str] = []
        self._ctx: Context | None = None
        self._endpoint = ""
        self._proof = ""
        self._server = ServerVersion()
        self._global_sql, self._session_sql = session.SHOW_GLOBAL, session.SHOW_SESSION
        self._metrics_sql = ""
        self._spelling: dict[str, str] = {}
        self._own: session.Own | None = None
        self._mine: OwnTraffic | None = None
        self._states: list[InnodbState] = []
        self._notes: list[str] = []
        self._polls: list[Poll] = []
        self._first: dict[str, str] | None = None
        self._first_numbers: dict[str, float] = {}
        self._last: dict[str, str] = {}
        self._columns: dict[str, list[float | None]] = {}
        self._slow, self._slow_ms = 0, 0.0
        self._file: ServerStatus | None = None

    @classmethod
    def of(cls, ctx: Context) -> ServerCounters | None:
        if not ctx.opts.mysql or not ctx.pids:
            return None
        options = ctx.opts.mysql_options
        return cls(
            options if isinstance(options, MysqlOptions) else MysqlOptions(), ctx.pids[0], ctx.out_dir / rundir.STATUS
        )

    # in the thread
    def open(self, ctx: Context) -> None:
        self._ctx = ctx
        self._conn, endpoint, self._secrets = connect(self.opts, self.pid, read_timeout=QUERY_TIMEOUT_S)
        self._endpoint, self._proof = str(endpoint), endpoint.proof
        with self._conn.cursor() as cur:
            cur.execute("SELECT @@version, @@version_comment")
            version, comment = cur.fetchone()
        family = server_family(str(version), str(comment or ""))
        self._server = ServerVersion(str(version), str(comment or ""), family, tuple(version_tuple(str(version))))
        self._global_sql, self._session_sql = session.status_sql(family)
        shown = session.pairs(self._conn, session.SHOW_GLOBAL)  # SHOW STATUS spells the names; before the window
        self._spelling = {k.upper(): k for k in shown}
        shown.update(self._open_metrics())
        thread = session.server_thread(self._conn, family)  # before its traffic is measured: not part of it
        self._own = session.Own(self.name, self._session_sql, self.clock, thread)
        self._states.append(self._state("start", shown))
        self._after_one_off_sql(ctx)

    def _after_one_off_sql(self, ctx: Context) -> None:
        """Wait (bounded) until the server facts' one-off reads are done: on a saturated server they can run
        seconds late, and their temporary tables, some on disk, would count as the load's in a window opened
        before them (no session status measures them; lifecycle.Window.one_off_sql)."""
        deadline = self.clock() + ONE_OFF_WAIT_S
        while not ctx.window.one_off_sql.wait(0.05):
            if self._done.is_set():
                return
            if self.clock() >= deadline:
                self._notes.append(
                    f"the server facts' first reads were still running {ONE_OFF_WAIT_S:g} s after this source "
                    "connected: what their statements added to the counters may count as the load's"
                )
                return

    def _open_metrics(self) -> dict[str, str]:
        """The METRICS this server has enabled (their values now); none with a note where it has no table."""
        try:
            rows = innodbstate.dict_query(self._conn)(
                "SELECT * FROM information_schema.INNODB_METRICS WHERE NAME IN ("
                + ", ".join(f"'{m}'" for m in METRICS)
                + ")"
            )
        except pymysql.err.OperationalError as err:
            if err.args and err.args[0] in (2006, 2013):
                raise
            self._notes.append(f"INNODB_METRICS not read: {scrub(err, self._secrets, 200)}")
            return {}
        except pymysql.MySQLError as err:
            self._notes.append(f"INNODB_METRICS not read: {scrub(err, self._secrets, 200)}")
            return {}
        on = {str(r.get("NAME")): r.get("COUNT") for r in rows if _enabled(r)}
        if on:
            names = ", ".join(f"'{m}'" for m in METRICS if m in on)
            self._metrics_sql = f"SELECT NAME, COUNT FROM information_schema.INNODB_METRICS WHERE NAME IN ({names})"
        return {k: str(v) for k, v in on.items()}

    def _state(self, when: str, values: dict[str, str]) -> InnodbState:
        history = next(((n, float(values[n])) for n in HISTORY_NAMES if _numeric(values.get(n))), None)
        query = innodbstate.dict_query(self._conn)
        return innodbstate.read_state(query, when, int(self.clock()), history)

    def read(self) -> Reading:
        if self._slow >= SLOW_POLLS:
            raise GaveUp(f"{SLOW_POLLS} status reads in a row took over {SLOW_S:g} s (the last {self._slow_ms:.0f} ms)")
        t0 = self.clock()
        values = session.pairs(self._conn, self._global_sql)
        if self._metrics_sql:
            values.update(session.pairs(self._conn, self._metrics_sql))
        t1 = self.clock()
        if self._own is not None:
            # its reads' increments land between the previous global read and this one: dated at its start,
            # the boundary the window view draws between the two (the same rounded number)
            self._own.poll(2 if self._metrics_sql else 1, at=round(t0, 6))
            self._own.begin(self._conn)  # once, right after the first poll (its reads are the window's start)
        return Reading(t0, (t1 - t0) * 1000, {self._spelling.get(k, k): v for k, v in values.items()})

    def keep(self, second: int, reading: Reading) -> dict[str, float | None]:
        with self._lock:
            self._store(second, reading)
        self._slow, self._slow_ms = (self._slow + 1 if reading.ms > SLOW_S * 1000 else 0), reading.ms
        return {}

    def _store(self, second: int, reading: Reading) -> None:
        numbers = {k: n for k, v in reading.values.items() if (n := _numeric(v)) is not None}
        index = len(self._polls)
        if self._first is None:
            self._first, self._first_numbers = reading.values, numbers
        for name, column in self._columns.items():
            column.append(numbers.get(name))
        for name, value in numbers.items():
            if name not in self._columns and self._first_numbers.get(name) != value:
                self._columns[name] = [self._first_numbers.get(name)] * index + [value]
        self._last = reading.values
        self._polls.append(Poll(second, round(reading.t, 6), round(reading.ms, 3)))

    def last(self) -> None:
        """The window's last poll, this connection's own traffic, then the end state (within its budget)."""
        started = self.clock()
        self._poll()
        if self._own is not None:
            self._mine = self._own.end(self._conn)
        if self.clock() - started > END_BUDGET_S:
            self._notes.append(
                f"InnoDB state at the end not read: the server answered slowly (over {END_BUDGET_S:g} s)"
            )
            return
        self._states.append(self._state("end", dict(self._last)))

    def close(self) -> None:
        try:
            if self._conn is not None:
                self._conn.close()
        except Exception:  # noqa: BLE001
            pass
        self._conn = None

    def why(self, err: BaseException) -> str:
        return scrub(str(err), self._secrets, 300) or type(err).__name__

    # when it stops
    def finish(self, ctx: Context) -> Part:
        if self._first is None and not self._states:
            return Part(self.name, warnings=self._warnings())
        with self._lock:
            status = self._status(ctx)
        self._file = status
        rundir.write_typed(self.path, status, compact=True)
        return Part(self.name, warnings=self._warnings(), files=(rundir.STATUS,))

    def _status(self, ctx: Context) -> ServerStatus:
        """The file, its polls cut to perf's window: the last poll before it starts the window, the first
        after it ends closes it (the source polls on while perf is being stopped)."""
        others = [session.spelled(o, self._spelling) for o in ctx.window.own_sql]
        lo, hi = self._cut(ctx.window.seconds(), others)
        polls = tuple(self._polls[lo : hi + 1])
        columns = {k: tuple(v[lo : hi + 1]) for k, v in self._columns.items()}
        columns = {k: v for k, v in columns.items() if len({x for x in v if x is not None}) > 1}
        own = list(others)
        if self._mine is not None:
            own.append(session.spelled(self._mine, self._spelling))
        return ServerStatus(
            source=self._endpoint,
            proof=self._proof,
            pid=self.pid,
            server=self._server,
            read_with=self._global_sql,
            polls=polls,
            values=columns,
            first=self._at(lo) if polls else {},
            last=self._at(hi) if polls else {},
            innodb=tuple(self._states),
            own=tuple(own),
            notes=tuple(self._notes) + tuple(m for s in self._states for m in s.missing),
        )

    def _cut(self, span: tuple[int, int] | None, others: list[OwnTraffic]) -> tuple[int, int]:
        """The polls that open and close the window. The opening one is the last before perf's window that no
        statement of another of pmuprof's connections ran across (the sources start together: a poller's
        first statements may run while this source's first read does, and then cannot be placed before or
        after it), else the first such poll."""
        last = len(self._polls) - 1

        def clean(i: int) -> bool:
            p = self._polls[i]
            return not any(o.overlaps(p.t, p.t + p.ms / 1000) for o in others)

        if span is None:
            return next((i for i in range(last + 1) if clean(i)), 0), last
        lo = max((i for i, p in enumerate(self._polls) if p.second < span[0] and clean(i)), default=None)
        if lo is None:
            lo = next((i for i in range(last + 1) if clean(i)), 0)
        hi = min((i for i, p in enumerate(self._polls) if p.second > span[1]), default=last)
        return lo, max(lo, hi)

    def _at(self, index: int) -> dict[str, str]:
        """The whole status as read at poll ``index`` (the last poll's as read; others rebuilt from the first
        poll and the values that changed)."""
        if index == len(self._polls) - 1:
            return dict(self._last)
        out = dict(self._first or {})
        out.update({k: _text(x) for k, v in self._columns.items() if (x := v[index]) is not None})
        return out

    def _warnings(self) -> tuple[str, ...]:
        if not self.error:
            return ()
        if not self.polls:
            return (f"server counters not collected ({self.error}): status.json not written",)
        return (
            f"server counters: collection stopped after {self.polls} polls ({self.error}); the window's counters "
            "end there",
        )

    def series(self) -> tuple[Series, ...]:
        """The KEYS this server has, per second: counters as rates (pmuprof's own statements taken out),
        levels as read."""
        window = WindowCounters.of(self._file) if self._file is not None else None
        if window is None:
            return ()
        out = []
        for key in KEYS:
            name = window.history_name() if key.name == HISTORY else key.name
            if name is None or not window.has(name):
                continue
            points: dict[int, float | None] = {s: v for s, v in window.per_second_values(name) if s is not None}
            out.append(Series.of(f"status.{key.name}", self.name, key.unit, key.about, key.show, points))
        return tuple(out)


def _numeric(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number == number and abs(number) != float("inf") else None


def _text(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)


def _enabled(row: dict[str, Any]) -> bool:
    """INNODB_METRICS says so in STATUS ('enabled') on MySQL and MariaDB 10.2, ENABLED (1) on MariaDB 10.11+."""
    if "ENABLED" in row:
        return str(row["ENABLED"]) in ("1", "True")
    return str(row.get("STATUS", "")).lower() == "enabled"

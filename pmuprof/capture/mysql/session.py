"""What pmuprof's own statements add to the server's counters, measured on each of its connections.

A connection's session status holds what its own statements added to the per-session counters
(model.status.PER_SESSION: Com_*, Handler_*, Created_tmp_*, Questions, ...). Read at a source's first and
last poll, the difference is what that source added to the global counters in between, exactly, and the
window view (model/wincounters.py) takes it out. One care: SHOW [SESSION|GLOBAL] STATUS moves its own
increments to the global counters behind the session's back (its temporary table, Handler_tmp_write), so on
MariaDB both are read through information_schema.SESSION_STATUS / GLOBAL_STATUS, plain SELECTs whose
increments stay in the session (measured on 10.2.11, 10.11 and 11.4.5). MySQL 5.7+ answers those tables
only with show_compatibility_56 (removed in 8.0), so there SHOW STATUS is used and its own temporary table,
if the server makes one, is not taken out.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pymysql
from collections.abc import Callable

from ...model.status import PER_SESSION, OwnTraffic

MARIADB_GLOBAL = "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS"
MARIADB_SESSION = "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.SESSION_STATUS"
SHOW_GLOBAL = "SHOW GLOBAL STATUS"
SHOW_SESSION = "SHOW SESSION STATUS"


def status_sql(family: str | None) -> tuple[str, str]:
    """(global, session) status reads for a server family."""
    return (MARIADB_GLOBAL, MARIADB_SESSION) if family == "mariadb" else (SHOW_GLOBAL, SHOW_SESSION)


def pairs(conn: Any, sql: str) -> dict[str, str]:
    with conn.cursor() as cur:
        cur.execute(sql)
        return {_name(r[0]): "" if r[1] is None else _name(r[1]) for r in cur.fetchall()}


def _name(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, (bytes, bytearray)) else str(value)


# The OS thread of the server serving this connection: MariaDB's processlist has it (TID, 10.0+), MySQL's
# performance_schema.threads (THREAD_OS_ID, 5.7+; none with performance_schema off).
MARIADB_THREAD = "SELECT TID FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()"
MYSQL_THREAD = "SELECT THREAD_OS_ID FROM performance_schema.threads WHERE PROCESSLIST_ID = CONNECTION_ID()"


def server_thread(conn: Any, family: str | None) -> int | None:
    """The server's OS thread id serving ``conn`` (None when the server does not say); one statement, read
    before a source's own traffic is measured so it is not part of it."""
    try:
        with conn.cursor() as cur:
            cur.execute(MARIADB_THREAD if family == "mariadb" else MYSQL_THREAD)
            row = cur.fetchone()
    except pymysql.err.OperationalError as err:
        if err.args and err.args[0] in (2006, 2013):  # the connection is gone: the caller says so
            raise
        return None
    except pymysql.MySQLError:
        return None
    value = row[0] if row else None
    return int(value) if isinstance(value, int) or (isinstance(value, str) and value.isdigit()) else None


def per_session(values: dict[str, str]) -> dict[str, float]:
    out = {}
    for name, value in values.items():
        if PER_SESSION.match(name):
            try:
                out[name] = float(value)
            except ValueError:
                continue
    return out


class Own:
    """One connection's own traffic: ``begin`` reads its session status, ``poll`` marks the start of each poll it
    then sends, ``end`` reads the session status again and gives the OwnTraffic (names as the server spells
    them in the session read: information_schema upper-cases them; ``spelled`` turns them into SHOW STATUS's)."""

    def __init__(
        self, source: str, session_sql: str | None, clock: Callable[[], float], thread: int | None = None
    ) -> None:
        self.source, self.sql, self.clock, self.thread = source, session_sql, clock, thread
        self.polls: list[float] = []
        self.ends: list[float] = []
        self.statements = 0
        self._before: dict[str, float] | None = None

    def begin(self, conn: Any) -> None:
        """The session status now; without ``session_sql``: information_schema's where the server has it
        (MariaDB), else SHOW SESSION STATUS."""
        if self._before is not None:
            return
        if self.sql is None:
            try:
                self._before, self.sql = per_session(pairs(conn, MARIADB_SESSION)), MARIADB_SESSION
            except pymysql.MySQLError:
                self.sql = SHOW_SESSION
        if self._before is None:
            self._before = per_session(pairs(conn, self.sql))

    def poll(self, statements: int = 1, at: float | None = None) -> None:
        """A poll of ``statements`` that began at ``at`` (default: now; a statement's counters move at its
        start, when the server reads the status too)."""
        if self._before is not None:
            now = round(self.clock(), 6)
            self.polls.append(now if at is None else at)
            self.ends.append(now)
            self.statements += statements

    def end(self, conn: Any) -> OwnTraffic | None:
        if self._before is None or not self.polls:
            return None
        before, after = self._before, per_session(pairs(conn, self.sql or SHOW_SESSION))
        added = {k: v - before[k] for k, v in after.items() if k in before and v > before[k]}
        return OwnTraffic(self.source, tuple(self.polls), self.statements + 2, added, tuple(self.ends), self.thread)


def spelled(own: OwnTraffic, spelling: dict[str, str]) -> OwnTraffic:
    """``own`` with its counter names as SHOW STATUS spells them (``spelling``: upper-case name → name)."""
    return replace(own, counters={spelling.get(k.upper(), k): v for k, v in own.counters.items()})

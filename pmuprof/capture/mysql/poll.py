"""Poll the processlist once a second during a capture into processlist.tsv (thread id, state, statement digest).

Reads only what SHOW PROCESSLIST reads: MariaDB's information_schema.PROCESSLIST (its TID column is
the OS thread id), else MySQL's performance_schema.threads (THREAD_OS_ID, PROCESSLIST_STATE/INFO and
the current statement's DIGEST_TEXT) — no lock, nothing that stops the server. A per-second source
(capture/persecond.py): each poll is stamped with the whole second of CLOCK_MONOTONIC at its midpoint,
the clock perf record samples with (tools/perf/argv.py SAMPLE_CLOCK), so a sample joins the row its
thread had in that second. Statement text is kept only as a normalised digest (literals replaced by
``?``): never a value. Memory is one poll's rows; the file is bounded by MAX_ROWS_PER_POLL and
persecond.MAX_POLLS.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, TextIO

import pymysql

from ...model.rundir import PROCESSLIST
from ...rundir_create import open_stream
from ..lifecycle import Context, Part
from ..persecond import Measure, PerSecond
from . import session
from .facts import MysqlOptions, _scrub, connect

HEADER = "# pmuprof processlist: second\ttid\tid\tuser\tdb\tcommand\tstate\ttime\tdigest"
COLUMNS = ("second", "tid", "id", "user", "db", "command", "state", "time", "digest")
MAX_ROWS_PER_POLL = 5000  # connections per poll kept (a server with more keeps the busiest first)
DIGEST_CHARS = 240

MARIADB_SQL = (
    "SELECT ID, TID, USER, DB, COMMAND, STATE, TIME, INFO FROM information_schema.PROCESSLIST "
    "WHERE ID <> CONNECTION_ID() AND COMMAND <> 'Sleep'"
)
MYSQL_SQL = (
    "SELECT t.PROCESSLIST_ID, t.THREAD_OS_ID, t.PROCESSLIST_USER, t.PROCESSLIST_DB, t.PROCESSLIST_COMMAND, "
    "t.PROCESSLIST_STATE, t.PROCESSLIST_TIME, COALESCE(s.DIGEST_TEXT, t.PROCESSLIST_INFO) "
    "FROM performance_schema.threads t LEFT JOIN performance_schema.events_statements_current s "
    "ON s.THREAD_ID = t.THREAD_ID WHERE t.PROCESSLIST_ID IS NOT NULL AND t.PROCESSLIST_ID <> CONNECTION_ID() "
    "AND t.PROCESSLIST_COMMAND <> 'Sleep'"
)

_STRING = re.compile(r"'(?:[^'\\]|\\.|'')*'|\"(?:[^\"\\]|\\.|\"\")*\"", re.S)
_NUMBER = re.compile(r"(?<![\w$.])[-+]?(?:0x[0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)(?![\w$])")
_LIST = re.compile(r"\(\s*\?(?:\s*,\s*\?)+\s*\)")
_COMMENT = re.compile(r"/\*(?!!).*?\*/|--[^\n]*|#[^\n]*", re.S)
_SPACE = re.compile(r"\s+")


def digest(sql: Any) -> str:
    """Statement text with every literal replaced by ``?`` (lists collapsed), comments dropped, one line."""
    if sql is None:
        return ""
    text = sql.decode("utf-8", "replace") if isinstance(sql, (bytes, bytearray)) else str(sql)
    text = _COMMENT.sub(" ", _STRING.sub("?", text[:65536]))
    text = _LIST.sub("(...)", _NUMBER.sub("?", text))
    text = _SPACE.sub(" ", text).strip()
    return text[:DIGEST_CHARS] + ("…" if len(text) > DIGEST_CHARS else "")


def _cell(value: Any) -> str:
    text = (
        value.decode("utf-8", "replace")
        if isinstance(value, (bytes, bytearray))
        else ("" if value is None else str(value))
    )
    return text.replace("\t", " ").replace("\n", " ").replace("\r", " ")[:200]


def row_line(second: int, row: tuple, shared: bool = False) -> str | None:
    """One processlist.tsv line for a (id, tid, user, db, command, state, time, info) row (None without a tid);
    ``shared`` (a run directory other users may read): user, db and the statement left empty."""
    pid_, tid, user, db, command, state, secs, info = row
    if tid is None or not str(tid).isdigit():
        return None
    if shared:
        user, db, info = "", "", None
    cells = (second, int(tid), pid_, user, db, command, state or "", secs, digest(info))
    return "\t".join(_cell(c) for c in cells) + "\n"


def choose_sql(conn: Any) -> str:
    """MariaDB's information_schema.PROCESSLIST when it has TID, else performance_schema.threads."""
    with conn.cursor() as cur:
        cur.execute("SELECT * FROM information_schema.PROCESSLIST LIMIT 0")  # its columns, no rows
        if "TID" in {str(d[0]).upper() for d in cur.description or ()}:
            return MARIADB_SQL
        cur.execute("SELECT @@performance_schema")
        if str(cur.fetchone()[0]) in ("1", "ON"):
            return MYSQL_SQL
    raise LookupError("no thread ids: information_schema.PROCESSLIST has no TID and performance_schema is OFF")


class Processlist(PerSecond):
    """The processlist source: processlist.tsv a poll a second (written as it goes, so a killed capture keeps
    what was polled) and the connections in a statement per second (series ``processlist.active``)."""

    name = "processlist"
    measures = (Measure("processlist.active", "connections", "connections running a statement (not Sleep)", show=True),)

    def __init__(self, opts: MysqlOptions, pid: int | None, path: Path, shared: bool = False, **kw: Any) -> None:
        super().__init__(**kw)
        self.opts, self.pid, self.path, self.shared = opts, pid, path, shared
        self.rows = 0
        self.source = ""
        self._secrets: list[str] = []
        self._conn: Any = None
        self._sql = ""
        self._out: TextIO | None = None
        self._own: session.Own | None = None
        self._ctx: Context | None = None

    @classmethod
    def of(cls, ctx: Context) -> Processlist | None:
        if not ctx.opts.mysql:
            return None
        options = ctx.opts.mysql_options
        return cls(
            options if isinstance(options, MysqlOptions) else MysqlOptions(),
            ctx.pids[0],
            ctx.out_dir / PROCESSLIST,
            ctx.opts.share,
        )

    def open(self, ctx: Context) -> None:
        self._conn, _ep, self._secrets = connect(self.opts, self.pid)
        self._ctx = ctx
        self._own = session.Own(self.name, None, self.clock)
        try:
            self._own.begin(self._conn)  # before its first statement: all it sends is inside what it measures
        except pymysql.MySQLError:  # its own traffic is then not known (not taken out); the polls go on
            self._own = None
        began = self.clock()
        self._sql = choose_sql(self._conn)
        if self._own is not None:
            self._own.poll(at=round(began, 6))  # choosing reads the processlist once (MariaDB: a table on disk)
        self.source = "information_schema.PROCESSLIST" if self._sql == MARIADB_SQL else "performance_schema.threads"
        self._out = open(open_stream(self.path), "w", encoding="utf-8")
        self._out.write(HEADER + "\n")

    def read(self) -> list[tuple]:
        began = self.clock()
        with self._conn.cursor() as cur:
            cur.execute(self._sql)
            rows = cur.fetchmany(MAX_ROWS_PER_POLL)
            cur.fetchall()  # the rest is dropped (bounded)
        if self._own is not None:
            self._own.poll(at=round(began, 6))
        return list(rows)

    def keep(self, second: int, reading: list[tuple]) -> dict[str, float | None]:
        lines = [ln for ln in (row_line(second, r, self.shared) for r in reading) if ln]
        if self._out is not None:
            self._out.write("".join(lines))
            self._out.flush()
        self.rows += len(lines)
        return {"processlist.active": float(len(lines))}

    def last(self) -> None:
        """What the polls added to the server's counters (the status source takes it out of them)."""
        try:
            own = self._own.end(self._conn) if self._own is not None else None
        except Exception:  # noqa: BLE001 - then the status source cannot take it out, and says nothing wrong
            own = None
        if own is not None and self._ctx is not None:
            self._ctx.window.own_sql.append(own)

    def close(self) -> None:
        for closing in (self._out, self._conn):
            try:
                if closing is not None:
                    closing.close()
            except Exception:  # noqa: BLE001
                pass
        self._out = self._conn = None

    def why(self, err: BaseException) -> str:
        return _scrub(str(err), self._secrets) or type(err).__name__

    def finish(self, ctx: Context) -> Part:
        """The run.json note saying what the polls gave (or why none)."""
        return Part(self.name, warnings=self._notes(), files=(PROCESSLIST,))

    def _notes(self) -> tuple[str, ...]:
        if self.polls and not self.error:
            return ()
        if self.polls:
            return (f"processlist polling stopped after {self.polls} polls: {self.error}",)
        return (
            f"processlist not polled during the capture ({self.error or 'no poll finished'}): "
            "no CPU by processlist state or statement",
        )

"""Poll the processlist once a second during a capture into processlist.tsv (thread id, state, statement digest).

Reads only what SHOW PROCESSLIST reads: MariaDB's information_schema.PROCESSLIST (its TID column is
the OS thread id), else MySQL's performance_schema.threads (THREAD_OS_ID, PROCESSLIST_STATE/INFO and
the current statement's DIGEST_TEXT) — no lock, nothing that stops the server. Each poll is stamped
with the whole second of CLOCK_MONOTONIC at its midpoint, the clock perf record samples with
(tools/perf/argv.py SAMPLE_CLOCK), so a sample joins the row its thread had in that second.
Statement text is kept only as a normalised digest (literals replaced by ``?``): never a value.
Memory is one poll's rows; the file is bounded by MAX_ROWS_PER_POLL and MAX_POLLS.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any, TextIO
from collections.abc import Callable

from .facts import MysqlOptions, _scrub, connect

HEADER = "# pmuprof processlist: second\ttid\tid\tuser\tdb\tcommand\tstate\ttime\tdigest"
COLUMNS = ("second", "tid", "id", "user", "db", "command", "state", "time", "digest")
MAX_ROWS_PER_POLL = 5000  # connections per poll kept (a server with more keeps the busiest first)
MAX_POLLS = 7200  # two hours of polls; a longer capture stops polling (said in run.json)
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


def row_line(second: int, row: tuple) -> str | None:
    """One processlist.tsv line for a (id, tid, user, db, command, state, time, info) row (None without a tid)."""
    pid_, tid, user, db, command, state, secs, info = row
    if tid is None or not str(tid).isdigit():
        return None
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


class Poller(threading.Thread):
    """Polls until stop(); ``error`` says why it stopped early or never started (no password in it)."""

    def __init__(
        self,
        opts: MysqlOptions,
        pid: int | None,
        path: Path,
        interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(daemon=True, name="pmuprof-processlist")
        self.opts, self.pid, self.path, self.interval, self.clock = opts, pid, path, interval, clock
        self._done = threading.Event()
        self.polls = 0
        self.rows = 0
        self.error = ""
        self.source = ""

    def stop(self, timeout: float = 5.0) -> None:
        self._done.set()
        self.join(timeout)

    def run(self) -> None:
        secrets: list[str] = []
        try:
            conn, _ep, secrets = connect(self.opts, self.pid)
        except Exception as err:  # noqa: BLE001 - the capture goes on without the processlist
            self.error = _scrub(err, secrets) or type(err).__name__
            return
        try:
            sql = choose_sql(conn)
            self.source = "information_schema.PROCESSLIST" if sql == MARIADB_SQL else "performance_schema.threads"
            with open(self.path, "w", encoding="utf-8") as out:
                out.write(HEADER + "\n")
                self._loop(conn, sql, out)
        except Exception as err:  # noqa: BLE001
            self.error = _scrub(err, secrets) or type(err).__name__
        finally:
            try:
                conn.close()
            except Exception:  # noqa: BLE001
                pass

    def _loop(self, conn: Any, sql: str, out: TextIO) -> None:
        next_at = self.clock()
        while not self._done.is_set() and self.polls < MAX_POLLS:
            t0 = self.clock()
            with conn.cursor() as cur:
                cur.execute(sql)
                rows = cur.fetchmany(MAX_ROWS_PER_POLL)
                cur.fetchall()  # the rest is dropped (bounded)
            second = int((t0 + self.clock()) / 2)
            lines = [ln for ln in (row_line(second, r) for r in rows) if ln]
            out.write("".join(lines))
            out.flush()
            self.polls += 1
            self.rows += len(lines)
            next_at = max(next_at + self.interval, self.clock())
            self._done.wait(max(0.0, next_at - self.clock()))
        if self.polls >= MAX_POLLS:
            self.error = f"stopped after {MAX_POLLS} polls"


def start(opts: MysqlOptions | None, pid: int | None, out_dir: Path) -> Poller:
    """A running poller writing ``out_dir``/processlist.tsv."""
    from ...model import rundir

    poller = Poller(opts or MysqlOptions(), pid, out_dir / rundir.PROCESSLIST)
    poller.start()
    return poller


def finish(poller: Poller | None) -> tuple[str, ...]:
    """Stop it; the run.json note saying what the processlist polls gave (or why none)."""
    if poller is None:
        return ()
    poller.stop()
    if poller.polls and not poller.error:
        return ()
    if poller.polls:
        return (f"processlist polling stopped after {poller.polls} polls: {poller.error}",)
    return (
        f"processlist not polled during the capture ({poller.error or 'no poll finished'}): "
        "no CPU by processlist state or statement",
    )

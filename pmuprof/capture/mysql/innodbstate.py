"""InnoDB's transactions and purge at one instant: INNODB_TRX, SHOW FULL PROCESSLIST and the TRANSACTIONS
section of SHOW ENGINE INNODB STATUS, read at the start and the end of a capture (model.status.InnodbState).

Read-only, three statements, none of them adds a temporary table on disk (SHOW FULL PROCESSLIST rather than
information_schema.PROCESSLIST, which does on MariaDB). Bounded: MAX_TRX_ROWS rows of INNODB_TRX, the status
text cut at MAX_STATUS_CHARS, MAX_KEPT transactions kept of each kind. Statements are kept as digests.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet

import pymysql.cursors

from ...model.status import InnodbState, Transaction
from .poll import digest
from .semaphores import split_sections

MAX_TRX_ROWS = 5000  # INNODB_TRX rows read (oldest first)
MAX_KEPT = 10  # transactions kept per list (the oldest, the longest waiting)
MAX_STATUS_CHARS = 4 << 20  # of SHOW ENGINE INNODB STATUS (servers cut it near 1 MB themselves)
MAX_BLOCKS = 5000  # "---TRANSACTION" blocks parsed

TRX_SQL = (
    "SELECT trx_id, trx_state, TIMESTAMPDIFF(SECOND, trx_started, NOW()) AS age_s, trx_mysql_thread_id, "
    "trx_query, trx_isolation_level, TIMESTAMPDIFF(SECOND, trx_wait_started, NOW()) AS wait_s, "
    f"trx_rows_locked, trx_rows_modified FROM information_schema.INNODB_TRX ORDER BY trx_started LIMIT {MAX_TRX_ROWS}"
)
PROCESSLIST_SQL = "SHOW FULL PROCESSLIST"

_TRX_COUNTER = re.compile(r"^Trx id counter (\d+)", re.M)
_PURGE = re.compile(r"^Purge done for trx's n:o < (\d+) undo n:o < (\d+)(?: state: ([^\n]*))?", re.M)
_HISTORY = re.compile(r"^History list length (\d+)", re.M)
_VIEWS = re.compile(r"^(\d+) read views? open inside InnoDB", re.M)
_BLOCK = re.compile(r"^---TRANSACTION ([^\n]*)$", re.M)
_THREAD = re.compile(r"^(?:MySQL|MariaDB) thread id (\d+)", re.M)
_VIEW = re.compile(r"^Trx read view will not see trx with id >= (\d+), sees < (\d+)", re.M)

Query = Callable[[str], list[dict[str, Any]]]


def parse_status(text: str) -> dict[str, Any]:
    """From SHOW ENGINE INNODB STATUS: trx id counter, purge progress, history length, read views open, and
    per connection (MySQL/MariaDB thread id) whether its transaction holds a read view and what it sees."""
    text = text[:MAX_STATUS_CHARS].replace("\r\n", "\n")
    body = split_sections(text).get("TRANSACTIONS", "")
    rows = split_sections(text).get("ROW OPERATIONS", "")
    out: dict[str, Any] = {}
    for key, pattern, where in (
        ("trx_id_counter", _TRX_COUNTER, body),
        ("history_length", _HISTORY, body),
        ("read_views", _VIEWS, rows),
    ):
        m = pattern.search(where)
        out[key] = int(m.group(1)) if m else None
    m = _PURGE.search(body)
    out["purge_trx_no"], out["purge_undo_no"] = (int(m.group(1)), int(m.group(2))) if m else (None, None)
    out["purge_state"] = (m.group(3) or "").strip() if m else ""
    out["views"], out["listed"] = _views(body)
    return out


def _views(body: str) -> tuple[dict[int, int | None], set[int]]:
    """Connection id → the lowest trx id its read view still sees (None: a view without that line), and
    every connection whose transaction the section lists (its view, or that it has none, is then known)."""
    views: dict[int, int | None] = {}
    listed: set[int] = set()
    heads = list(_BLOCK.finditer(body))[:MAX_BLOCKS]
    for i, head in enumerate(heads):
        block = body[head.end() : heads[i + 1].start() if i + 1 < len(heads) else len(body)]
        thread, view = _THREAD.search(block), _VIEW.search(block)
        if thread:
            listed.add(int(thread.group(1)))
            if view:
                views[int(thread.group(1))] = int(view.group(2))
    return views, listed


def _int(value: Any) -> int | None:
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


def _text(value: Any, limit: int = 64) -> str:
    text = value.decode("utf-8", "replace") if isinstance(value, (bytes, bytearray)) else str(value or "")
    return " ".join(text.split())[:limit]


def transaction(row: Mapping[str, Any], sessions: Mapping[int, Mapping[str, Any]]) -> Transaction:
    """One INNODB_TRX row with its connection's processlist row (Command, Time, User)."""
    thread = _int(row.get("trx_mysql_thread_id"))
    session = sessions.get(thread or -1, {})
    return Transaction(
        trx_id=_text(row.get("trx_id")),
        state=_text(row.get("trx_state")),
        age_s=_int(row.get("age_s")),
        thread_id=thread,
        statement=digest(row.get("trx_query")),
        isolation=_text(row.get("trx_isolation_level")),
        wait_s=_int(row.get("wait_s")),
        rows_locked=_int(row.get("trx_rows_locked")),
        rows_modified=_int(row.get("trx_rows_modified")),
        command=_text(session.get("Command")),
        idle_s=_int(session.get("Time")),
        user=_text(session.get("User")),
    )


def with_views(
    trxs: Iterable[Transaction], views: Mapping[int, int | None], listed: AbstractSet[int] = frozenset()
) -> tuple[Transaction, ...]:
    """Each transaction with what the status says of its read view (and whether it said anything)."""
    out = []
    for t in trxs:
        if t.thread_id is not None and t.thread_id in views:
            t = replace(t, read_view=True, view_sees_below=views[t.thread_id])
        out.append(replace(t, listed=t.thread_id in listed) if t.thread_id is not None else t)
    return tuple(out)


def state_of(
    rows: list[Mapping[str, Any]], sessions: Mapping[int, Mapping[str, Any]], parsed: Mapping[str, Any]
) -> dict[str, Any]:
    """The InnodbState fields from INNODB_TRX rows (oldest first), the processlist by Id, the parsed status."""
    trxs = [transaction(r, sessions) for r in rows]
    views, listed = parsed.get("views") or {}, set(parsed.get("listed") or ())
    viewers = {t.thread_id for t in trxs if t.thread_id in views}
    oldest = trxs[:MAX_KEPT] + [t for t in trxs[MAX_KEPT:] if t.thread_id in viewers][:MAX_KEPT]
    waiting = sorted((t for t in trxs if t.state == "LOCK WAIT"), key=lambda t: -(t.wait_s or 0))
    return {
        "transactions": len(trxs),
        "lock_waits": len(waiting),
        "oldest": with_views(oldest, views, listed),
        "waiting": with_views(waiting[:MAX_KEPT], views, listed),
        **{k: parsed.get(k) for k in ("trx_id_counter", "purge_trx_no", "purge_undo_no", "read_views")},
        "purge_state": parsed.get("purge_state") or "",
    }


def read_state(query: Query, when: str, second: int, history: tuple[str, float] | None) -> InnodbState:
    """The state now; ``query`` runs one statement and returns its rows as dicts. ``history``: the history
    length the status poll just read (name, value), else the status text's line is used. A statement that
    fails leaves its part out with a note; the first failure that is a lost connection is raised."""
    missing: list[str] = []
    rows = _part(missing, "INNODB_TRX", lambda: query(TRX_SQL)) or []
    plist = _part(missing, "SHOW FULL PROCESSLIST", lambda: query(PROCESSLIST_SQL)) or []
    text = _part(missing, "SHOW ENGINE INNODB STATUS", lambda: _status_text(query("SHOW ENGINE INNODB STATUS")))
    parsed = parse_status(text or "")
    sessions = {i: r for r in plist if (i := _int(r.get("Id"))) is not None}
    fields = state_of(rows, sessions, parsed)
    if history is not None:
        fields["history_length"], fields["history_source"] = int(history[1]), history[0]
    elif parsed.get("history_length") is not None:
        fields["history_length"], fields["history_source"] = parsed["history_length"], "SHOW ENGINE INNODB STATUS"
    return InnodbState(when=when, second=second, missing=tuple(missing), **fields)


def _status_text(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return ""
    value = rows[0].get("Status", "")
    return value.decode("utf-8", "replace") if isinstance(value, (bytes, bytearray)) else str(value)


def _part(missing: list[str], what: str, run: Callable[[], Any]) -> Any:
    try:
        return run()
    except pymysql.err.OperationalError as err:
        if err.args and err.args[0] in (2006, 2013):  # the connection is gone (a timeout): the caller gives up
            raise
        missing.append(f"{what}: {_text(err, 200)}")
    except pymysql.MySQLError as err:  # no privilege, no such table (an old server): that part is missing
        missing.append(f"{what}: {_text(err, 200)}")
    return None


def dict_query(conn: Any) -> Query:
    def run(sql: str) -> list[dict[str, Any]]:
        with conn.cursor(pymysql.cursors.DictCursor) as cur:
            cur.execute(sql)
            return list(cur.fetchmany(MAX_TRX_ROWS))

    return run

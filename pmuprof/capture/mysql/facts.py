"""Collect MySQL/MariaDB server facts (mysql.json) over PyMySQL; never raises, never shows a password."""

from __future__ import annotations

import os
import time
from typing import Any
from collections.abc import Callable

import pymysql.cursors

from ... import infile
from ...model.server import server_family
from . import parse as mp
from .procsym import read_process_symbol
from .connect import DEFAULT_SOCKETS, Endpoint, MysqlOptions, connect, endpoints
from .connect import scrub as _scrub
from .semaphores import parse_semaphores

__all__ = ["DEFAULT_SOCKETS", "Endpoint", "MysqlOptions", "collect_facts", "connect", "endpoints"]

_ERROR_LOG_TAIL = 64 << 20  # bytes of the error log to scan
_READ_MAX = 64 << 20  # at most this much of a pid file


def _read(path: str) -> str:
    """A small file (@@pid_file) as text; "" when missing or not a small regular file (infile)."""
    try:
        with infile.opened(path, infile.SMALL_MAX_BYTES) as fh:
            return fh.read(_READ_MAX).decode("utf-8", "replace")
    except OSError:
        return ""


def _rows(conn: Any, sql: str) -> list[dict[str, Any]]:
    with conn.cursor(pymysql.cursors.DictCursor) as cur:
        cur.execute(sql)
        return list(cur.fetchall())


def _pairs(conn: Any, sql: str) -> dict[str, str]:
    with conn.cursor() as cur:
        cur.execute(sql)
        return {str(r[0]): "" if r[1] is None else str(r[1]) for r in cur.fetchall()}


def _innodb_status(conn: Any) -> str:
    with conn.cursor() as cur:
        cur.execute("SHOW ENGINE INNODB STATUS")
        row = cur.fetchone()
    return str(row[2]) if row else ""


def _processlist(conn: Any, own_id: int, variables: dict[str, str], missing: list[str]) -> dict[str, Any]:
    rows = _rows(conn, "SELECT * FROM information_schema.PROCESSLIST")
    for row in rows:
        row.pop("INFO", None)  # query text can hold literals and secrets: never kept
        row.pop("INFO_BINARY", None)
    has_tid = bool(rows) and "TID" in {k.upper() for k in rows[0]}
    names: dict[str, str] = {}
    if not has_tid and variables.get("performance_schema") == "ON":
        tids = {
            r["PROCESSLIST_ID"]: r["THREAD_OS_ID"]
            for r in _rows(conn, "SELECT PROCESSLIST_ID, THREAD_OS_ID, NAME FROM performance_schema.threads")
            if r.get("PROCESSLIST_ID") is not None
        }
        for row in rows:
            row["TID"] = tids.get(row.get("ID"))
        has_tid = True
    if variables.get("performance_schema") == "ON":
        names = {
            str(r["THREAD_OS_ID"]): str(r["NAME"])
            for r in _rows(
                conn, "SELECT THREAD_OS_ID, NAME FROM performance_schema.threads WHERE THREAD_OS_ID IS NOT NULL"
            )
        }
    if not has_tid:
        missing.append("processlist has no thread ids (no TID column, performance_schema OFF)")
    summary = mp.processlist_summary(rows, own_id)
    if names:
        summary["thread_names"] = names
    return summary


def _error_log(variables: dict[str, str], pid: int | None, local: bool, missing: list[str]) -> dict[str, Any] | None:
    path = variables.get("log_error", "")
    if not path or path == "stderr":
        missing.append("log_error is empty: the error log goes to stderr/journal, not read")
        return None
    if not os.path.isabs(path):
        path = os.path.join(variables.get("datadir", ""), path)
    path = os.path.normpath(path)
    if not local:
        missing.append(f"error log {path} is on the server host, not read")
        return {"path": path, "memory_barrier": None, "line": None, "event_mutexes": None}
    candidates = [path] + ([f"/proc/{pid}/root{path}"] if pid else [])
    for cand in candidates:
        try:
            with infile.opened(cand, infile.ANY_SIZE) as fh:  # the mysql user may have made it a FIFO
                fh.seek(max(0, os.fstat(fh.fileno()).st_size - _ERROR_LOG_TAIL))
                found = mp.scan_error_log(raw.decode("utf-8", "replace") for raw in fh)
            if found["memory_barrier"] is None:
                missing.append(
                    f"error log {path} has no 'is used for memory barrier' line "
                    "(this server version does not print it, or the log was rotated)"
                )
            return {"path": path, **found}
        except OSError as err:
            reason = err.why if isinstance(err, infile.Refused) else err.strerror or str(err)
    missing.append(f"error log {path} unreadable: {reason}")
    return {"path": path, "memory_barrier": None, "line": None, "event_mutexes": None}


def _server_pid(variables: dict[str, str], local: bool) -> int | None:
    """The server's pid from @@pid_file, when it is on this host and names a live mysqld/mariadbd."""
    text = _read(variables.get("pid_file", "")).strip() if local else ""
    if not text.isdigit():
        return None
    comm = _read(f"/proc/{text}/comm").strip()
    return int(text) if comm in ("mysqld", "mariadbd") else None


def _relax_multiplier(pid: int | None, missing: list[str]) -> int | None:
    if pid is None:
        missing.append("my_cpu_relax_multiplier not read: server pid unknown")
        return None
    try:
        return read_process_symbol(pid, "my_cpu_relax_multiplier", 4)
    except (OSError, LookupError, ValueError) as err:
        missing.append(f"my_cpu_relax_multiplier not read from pid {pid}: {err}")
        return None


def _section(missing: list[str], what: str, fn: Callable[[], Any], secrets: list[str]) -> Any:
    try:
        return fn()
    except Exception as err:  # noqa: BLE001 - one failed query must not lose the other facts
        missing.append(f"{what}: {_scrub(err, secrets)}")
        return None


def _server(conn: Any) -> tuple[dict[str, Any], int]:
    with conn.cursor() as cur:
        cur.execute("SELECT @@version, @@version_comment, CONNECTION_ID()")
        version, comment, own_id = cur.fetchone()
    return {
        "version": version,
        "version_comment": comment,
        "family": server_family(version, comment or ""),
        "version_tuple": mp.version_tuple(version),
    }, int(own_id)


def _semaphores(conn: Any, missing: list[str]) -> dict[str, Any]:
    sem = parse_semaphores(_innodb_status(conn))
    if not sem["found"]:
        missing.append("SHOW ENGINE INNODB STATUS has no SEMAPHORES section")
    elif sem["empty"]:
        missing.append(
            "SEMAPHORES section empty (MariaDB 10.6+ has no sync array: spin waits show only in the profile)"
        )
    return sem


# The InnoDB tablespace files, read from InnoDB's own dictionary cache (no table is opened, unlike
# information_schema.TABLES): MySQL 8.0+ INNODB_TABLESPACES; MySQL 5.7 and MariaDB INNODB_SYS_TABLESPACES.
_TABLESPACES = {"mysql8": "INNODB_TABLESPACES", "other": "INNODB_SYS_TABLESPACES"}


def _innodb_data(conn: Any, server: dict[str, Any]) -> dict[str, Any]:
    """How much InnoDB data there is (every tablespace but the temporary one): the most a pool could hold.

    Checked live on MariaDB 10.2.11 (file-per-table spaces) and 11.4.5 (also innodb_system, undo, temporary)."""
    mysql8 = server["family"] in ("mysql", "percona") and server["version_tuple"][:1] >= [8]
    table = _TABLESPACES["mysql8" if mysql8 else "other"]
    row = _rows(
        conn,
        "SELECT COUNT(*) AS spaces, SUM(FILE_SIZE) AS bytes "
        f"FROM information_schema.{table} WHERE NAME <> 'innodb_temporary'",
    )[0]
    return {
        "source": f"information_schema.{table}.FILE_SIZE",
        "tablespaces": int(row["spaces"] or 0),
        "bytes": int(row["bytes"] or 0),
    }


def _facts(
    conn: Any,
    ep: Endpoint,
    pid: int | None,
    interval_s: float,
    secrets: list[str],
    read: Callable[[], None],
    wait: Callable[[float], Any],
) -> dict[str, Any]:
    missing: list[str] = []
    server, own_id = _server(conn)
    t0, before = time.monotonic(), _pairs(conn, "SHOW GLOBAL STATUS")
    variables = mp.mask_secrets(_pairs(conn, "SHOW GLOBAL VARIABLES"))
    sem = _section(missing, "SHOW ENGINE INNODB STATUS", lambda: _semaphores(conn, missing), secrets)
    plist = _section(missing, "processlist", lambda: _processlist(conn, own_id, variables, missing), secrets)
    innodb_data = _section(missing, "InnoDB tablespace sizes", lambda: _innodb_data(conn, server), secrets)
    read()  # the one-off reads are done (their temporary tables too): only the status read at the end is left
    wait(max(0.0, interval_s - (time.monotonic() - t0)))
    t1, after = time.monotonic(), _pairs(conn, "SHOW GLOBAL STATUS")
    if variables.get("performance_schema") != "ON":
        missing.append("performance_schema is OFF")
    if "innodb_buffer_pool_instances" not in variables:
        missing.append("innodb_buffer_pool_instances does not exist on this server")
    server_pid = pid or _server_pid(variables, ep.local)
    facts: dict[str, Any] = {
        "reachable": True,
        "error": None,
        "source": str(ep),
        "proof": ep.proof,
        "pid": server_pid,
        "server": server,
        "variables": variables,
        "status": {
            "interval_s": round(t1 - t0, 3),
            "before": before,
            "after": after,
            "rates": mp.status_rates(before, after, t1 - t0),
        },
        "semaphores": sem,
        "processlist": plist,
        "error_log": _error_log(variables, server_pid, ep.local, missing),
        "my_cpu_relax_multiplier": None,
        "innodb_data": innodb_data,
    }
    if server["family"] == "mariadb":
        facts["my_cpu_relax_multiplier"] = _relax_multiplier(server_pid if ep.local else None, missing)
    facts["missing"] = missing
    return facts


def collect_facts(
    opts: MysqlOptions | None,
    pid: int | None = None,
    interval_s: float = 2.0,
    read: Callable[[], None] = lambda: None,
    wait: Callable[[float], Any] = time.sleep,
) -> dict[str, Any]:
    """Server facts for mysql.json; ``{"reachable": false, "error": ...}`` when the server cannot be used.
    ``read`` is called once the one-off reads (variables, InnoDB status, processlist, tablespaces) are done,
    before the interval's closing status read (not when the server cannot be used); ``wait`` sleeps until
    that read (at most the rest of ``interval_s``; it may return sooner: a capture that has ended).

    Never raises. No password appears in the result or its error text.
    """
    opts = opts or MysqlOptions()
    secrets: list[str] = []
    try:
        conn, ep, secrets = connect(opts, pid)
    except Exception as err:  # noqa: BLE001 - unreachable is a fact, not a failure
        return {"reachable": False, "error": _scrub(err, secrets) or type(err).__name__}
    try:
        return _facts(conn, ep, pid, interval_s, secrets, read, wait)
    except Exception as err:  # noqa: BLE001
        return {"reachable": False, "error": f"{ep}: {_scrub(err, secrets)}", "source": str(ep)}
    finally:
        try:
            conn.close()
        except Exception:  # noqa: BLE001
            pass

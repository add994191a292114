"""Pure parsers for server facts: version, status rates, processlist, error log, sockets."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any
from collections.abc import Iterable, Mapping

from ...model.status import is_level

_SECRET_NAME = re.compile(r"pass(word|wd)?|secret|_auth$|credential|_key$", re.I)
_BARRIER = re.compile(r"(\S+\(\)) is used for memory barrier")


def version_tuple(version: str) -> list[int]:
    """[major, minor, patch] from a version string such as '10.11.6-MariaDB-0+deb12u1'."""
    m = re.match(r"(?:5\.5\.5-)?(\d+)\.(\d+)\.(\d+)", version.strip())
    return [int(m.group(1)), int(m.group(2)), int(m.group(3))] if m else []


def mask_secrets(variables: Mapping[str, str]) -> dict[str, str]:
    """Variables as given, except free-text values whose name smells of a secret are masked."""
    return {k: ("********" if _SECRET_NAME.search(k) and not _plain(v) else v) for k, v in variables.items()}


def _plain(value: str) -> bool:
    return not value or value.upper() in ("ON", "OFF", "YES", "NO") or _number(value) is not None


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def status_rates(before: Mapping[str, str], after: Mapping[str, str], seconds: float) -> dict[str, float]:
    """Per-second rates of the counters that changed between two SHOW GLOBAL STATUS snapshots."""
    rates: dict[str, float] = {}
    if seconds <= 0:
        return rates
    for name, value in after.items():
        if is_level(name):
            continue
        a, b = _number(before.get(name)), _number(value)
        if a is not None and b is not None and b != a:
            rates[name] = round((b - a) / seconds, 3)
    return rates


def processlist_summary(rows: Iterable[Mapping[str, Any]], own_id: int | None) -> dict[str, Any]:
    """State and command histograms, and TID → state where the server reports thread ids."""
    states: Counter[str] = Counter()
    commands: Counter[str] = Counter()
    tids: dict[str, str] = {}
    threads = 0
    own_thread: int | None = None
    for row in rows:
        row = {str(k).upper(): v for k, v in row.items()}
        if own_id is not None and row.get("ID") == own_id:
            own_thread = _int_or_none(row.get("TID"))
            continue
        threads += 1
        state = str(row.get("STATE") or "") or "(none)"
        states[state] += 1
        commands[str(row.get("COMMAND") or "")] += 1
        if row.get("TID"):
            tids[str(row["TID"])] = state
    return {
        "threads": threads,
        "states": dict(states.most_common()),
        "commands": dict(commands.most_common()),
        "tids": tids,
        "own_thread": own_thread,
    }


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def scan_error_log(lines: Iterable[str]) -> dict[str, Any]:
    """The last memory-barrier line and whether "Uses event mutexes" appears (MySQL 5.7 startup notes)."""
    out: dict[str, Any] = {"memory_barrier": None, "line": None, "event_mutexes": False}
    for line in lines:
        if "is used for memory barrier" in line:
            m = _BARRIER.search(line)
            out["memory_barrier"] = m.group(1) if m else None
            out["line"] = line.strip()
        elif "Uses event mutexes" in line:
            out["event_mutexes"] = True
    return out


def listening_unix_sockets(net_unix: str, inodes: set[int] | None = None) -> list[str]:
    """Paths of listening unix sockets in /proc/PID/net/unix text, optionally only these inodes."""
    out: list[str] = []
    for line in net_unix.splitlines()[1:]:
        parts = line.split()
        if len(parts) < 8 or not parts[6].isdigit():
            continue
        listening = int(parts[3], 16) & 0x10000 and parts[5] == "01"
        path = parts[7]
        if listening and path.startswith("/") and (inodes is None or int(parts[6]) in inodes):
            out.append(path)
    return out


_VALUED = (
    "socket",
    "port",
    "datadir",
    "pid_file",
    "bind_address",
    "defaults_file",
    "defaults_extra_file",
    "defaults_group_suffix",
)


def server_args(argv: list[str]) -> dict[str, str | None]:
    """The connection and option-file arguments of a server command line (/proc/PID/cmdline): ``--name=value``
    or ``--name value``, ``-`` or ``_`` in the name, ``loose-`` dropped, the last one winning; ``no_defaults``
    is None when given."""
    out: dict[str, str | None] = {}
    words = iter(argv[1:])
    for arg in words:
        if not arg.startswith("--"):
            continue
        name, eq, value = arg[2:].partition("=")
        name = name.replace("-", "_")
        name = name[len("loose_") :] if name.startswith("loose_") else name
        if name == "no_defaults":
            out[name] = None
        elif name in _VALUED:
            out[name] = value if eq else next(words, "")
    return out

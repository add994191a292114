"""Read MySQL/MariaDB client option files (my.cnf) the way the mysql client does."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from collections.abc import Iterable

# Groups the mariadb/mysql command-line client reads, in this order.
CLIENT_GROUPS = ("client", "client-server", "client-mariadb", "mysql", "mariadb-client")
DEFAULT_FILES = ("/etc/my.cnf", "/etc/mysql/my.cnf", "~/.my.cnf")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "s": " ", '"': '"', "'": "'", "\\": "\\"}
_MAX_DEPTH = 8


def _unquote(value: str) -> str:
    """Strip a trailing comment and matching quotes; expand backslash escapes like the client."""
    value = value.strip()
    if value[:1] in ("'", '"'):
        quote = value[0]
        end = value.find(quote, 1)
        if end > 0:
            return value[1:end]
    hash_at = value.find("#")  # an unquoted '#' starts a comment, as my_print_defaults reads it
    if hash_at >= 0:
        value = value[:hash_at].rstrip()
    out, i = [], 0
    while i < len(value):
        ch = value[i]
        if ch == "\\" and i + 1 < len(value):
            out.append(_ESCAPES.get(value[i + 1], "\\" + value[i + 1]))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def parse_option_text(text: str) -> list[tuple[str, str, str | None]]:
    """Parse my.cnf text into ``(group, key, value)`` in file order; keys use ``_`` not ``-``.

    ``!include FILE`` / ``!includedir DIR`` come back as group ``"!"`` with the directive as
    key and the path as value, so the caller decides what to read. A bare key has value None.
    """
    items: list[tuple[str, str, str | None]] = []
    group = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("!include"):
            directive, _, path = line.partition(" ")
            items.append(("!", directive, path.strip()))
            continue
        if line.startswith("[") and "]" in line:
            group = line[1 : line.index("]")].strip().lower()
            continue
        key, eq, value = line.partition("=")
        key = key.strip().lower().replace("-", "_")
        if key.startswith("loose_"):
            key = key[len("loose_") :]
        items.append((group, key, _unquote(value) if eq else None))
    return items


def world_writable(path: Path) -> bool:
    """A regular file every local user may write: the mysql client ignores it ("World-writable config file
    ... is ignored"), as anyone could have put a user, host or socket of theirs in it."""
    try:
        st = path.stat()
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and bool(st.st_mode & stat.S_IWOTH)


def _expand(
    path: Path, depth: int, seen: set[Path], ignored: list[str] | None = None
) -> Iterable[tuple[str, str, str | None]]:
    if depth > _MAX_DEPTH or path in seen:
        return
    seen.add(path)
    if world_writable(path):
        if ignored is not None:
            ignored.append(str(path))
        return
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    for group, key, value in parse_option_text(text):
        if group != "!":
            yield group, key, value
        elif key == "!include" and value:
            yield from _expand(Path(value), depth + 1, seen, ignored)
        elif key == "!includedir" and value:
            folder = Path(value)
            names = sorted(p for p in folder.glob("*") if p.suffix in (".cnf", ".ini")) if folder.is_dir() else []
            for child in names:
                yield from _expand(child, depth + 1, seen, ignored)


def with_suffix(groups: tuple[str, ...], suffix: str | None) -> tuple[str, ...]:
    """``--defaults-group-suffix``: each group is also read with the suffix appended, after it."""
    if not suffix:
        return groups
    return tuple(g for group in groups for g in (group, group + suffix.lower()))


def option_files(
    defaults_file: str | None = None, extra_file: str | None = None, home: str | None = None
) -> list[Path]:
    """The files the client reads, in order: only ``defaults_file`` when given; else the global
    files, ``$MYSQL_HOME/my.cnf``, ``extra_file`` (--defaults-extra-file), then ``~/.my.cnf``."""
    if defaults_file:
        return [Path(defaults_file)]
    home = home if home is not None else os.path.expanduser("~")
    files = [Path(f.replace("~", home, 1)) for f in DEFAULT_FILES]
    if os.environ.get("MYSQL_HOME"):
        files.insert(2, Path(os.environ["MYSQL_HOME"]) / "my.cnf")
    if extra_file:
        files.insert(len(files) - 1, Path(extra_file))
    return files


def client_options(
    defaults_file: str | None = None,
    groups: tuple[str, ...] = CLIENT_GROUPS,
    home: str | None = None,
    extra_file: str | None = None,
    group_suffix: str | None = None,
    ignored: list[str] | None = None,
) -> dict[str, str | None]:
    """Client options from option files: only ``defaults_file`` when given, else the defaults.

    Later files and later lines win, as with the mysql client; a world-writable file is skipped, as the
    client skips it (its path goes to ``ignored``).
    """
    files = option_files(defaults_file, extra_file, home)
    groups = with_suffix(groups, group_suffix)
    options: dict[str, str | None] = {}
    seen: set[Path] = set()
    for path in files:
        for group, key, value in _expand(path, 0, seen, ignored):
            if group in groups:
                options[key] = value
    return options


# Groups a server reads its own options from (MariaDB's mysqld and mariadbd; MySQL's mysqld).
SERVER_GROUPS = ("mysqld", "server", "mariadb", "mariadbd", "client-server")
SERVER_FILES = ("/etc/my.cnf", "/etc/mysql/my.cnf")  # a server's global option files


def server_options(
    defaults_file: str | None = None,
    extra_file: str | None = None,
    group_suffix: str | None = None,
    root: str = "",
) -> dict[str, str | None]:
    """The options a server reads from option files, given its command line's --defaults-file,
    --defaults-extra-file and --defaults-group-suffix: only ``defaults_file``, else the global files and
    ``extra_file``. Paths are read under ``root`` (``/proc/PID/root``: the server's own filesystem)."""
    files = [defaults_file] if defaults_file else [*SERVER_FILES, *([extra_file] if extra_file else [])]
    groups = with_suffix(SERVER_GROUPS, group_suffix)
    options: dict[str, str | None] = {}
    seen: set[Path] = set()
    for name in files:
        for group, key, value in _expand(Path(root + name), 0, seen):
            if group in groups:
                options[key] = value
    return options

"""Client options resolved as the server's own tools do (my_print_defaults), pmuprof's parser as the fallback."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import dataclass

from .optionfiles import CLIENT_GROUPS, client_options

TIMEOUT_S = 10.0


class OptionFileError(ConnectionError):
    """The option files cannot be read as asked (a missing --defaults-file, a login path nobody can read)."""


@dataclass(frozen=True)
class OptionSources:
    """Which option files to read, with the mysql client's own option names."""

    defaults_file: str | None = None  # --defaults-file: only this file
    extra_file: str | None = None  # --defaults-extra-file: also this one, before ~/.my.cnf
    group_suffix: str | None = None  # --defaults-group-suffix: [client] and [client<suffix>] ...
    login_path: str | None = None  # --login-path: a group of ~/.mylogin.cnf (MySQL's clients only)
    no_defaults: bool = False  # --no-defaults: read no option file at all


def print_defaults_argv(tool: str, src: OptionSources, groups: tuple[str, ...], show: bool) -> list[str]:
    """my_print_defaults' command line. The file options must come first (both MySQL and MariaDB)."""
    argv = [tool]
    if src.no_defaults:
        return argv + ["--no-defaults"]
    if src.defaults_file:
        argv.append(f"--defaults-file={src.defaults_file}")
    elif src.extra_file:
        argv.append(f"--defaults-extra-file={src.extra_file}")
    if src.group_suffix:
        argv.append(f"--defaults-group-suffix={src.group_suffix}")
    if src.login_path:
        argv.append(f"--login-path={src.login_path}")
    if show:  # MySQL masks passwords as ***** unless asked to show them
        argv.append("--show")
    return argv + list(groups)


def parse_print_defaults(text: str) -> dict[str, str | None]:
    """``--key=value`` lines (later wins) as option-file keys: ``_`` for ``-``, no ``loose_`` prefix."""
    out: dict[str, str | None] = {}
    for line in text.splitlines():
        if not line.startswith("--"):
            continue
        key, eq, value = line[2:].partition("=")
        key = key.strip().lower().replace("-", "_")
        if key.startswith("loose_"):
            key = key[len("loose_") :]
        out[key] = value if eq else None
    return out


@functools.lru_cache(maxsize=4)
def _capabilities(tool: str) -> frozenset[str]:
    """Which of --login-path / --show this my_print_defaults accepts (MySQL's does, MariaDB's does not)."""
    try:
        text = subprocess.run(
            [tool, "--help"], capture_output=True, text=True, timeout=TIMEOUT_S, check=False, stdin=subprocess.DEVNULL
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    return frozenset(opt for opt in ("--login-path", "--show") if opt in text)


def find_tool() -> str | None:
    """$PMUPROF_MY_PRINT_DEFAULTS (empty: never use it), else my_print_defaults on PATH."""
    env = os.environ.get("PMUPROF_MY_PRINT_DEFAULTS")
    if env is not None:
        return env or None
    return shutil.which("my_print_defaults")


def resolve(
    src: OptionSources, groups: tuple[str, ...] = CLIENT_GROUPS, tool: str | None = None
) -> tuple[dict[str, str | None], str]:
    """(options, how they were read). Raises OptionFileError when the client itself would refuse."""
    tool = tool if tool is not None else find_tool()
    caps = _capabilities(tool) if tool else frozenset()
    if src.login_path and "--login-path" not in caps:
        what = f"{tool} (MariaDB's)" if tool else "no my_print_defaults here"
        raise OptionFileError(
            f"--login-path {src.login_path}: {what} cannot read ~/.mylogin.cnf; install MySQL's "
            "client tools, or put the options in a file and pass --defaults-extra-file"
        )
    if not tool:
        return _fallback(src, groups), "pmuprof's option-file parser (no my_print_defaults)"
    argv = print_defaults_argv(tool, src, groups, "--show" in caps)
    try:
        proc = subprocess.run(
            argv, capture_output=True, text=True, timeout=TIMEOUT_S, check=False, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError) as err:
        return _fallback(src, groups), f"pmuprof's option-file parser ({tool} failed: {err})"
    if proc.returncode != 0:
        reason = " ".join(proc.stderr.split())[:200] or f"exit {proc.returncode}"
        raise OptionFileError(f"{tool} refused the option files: {reason}")
    return parse_print_defaults(proc.stdout), tool


def ignored_files(src: OptionSources, home: str | None = None) -> tuple[str, ...]:
    """The option files the client would read but ignores, being world-writable (as my_print_defaults does)."""
    if src.no_defaults:
        return ()
    ignored: list[str] = []
    client_options(src.defaults_file, extra_file=src.extra_file, home=home, ignored=ignored)
    return tuple(ignored)


def _fallback(src: OptionSources, groups: tuple[str, ...]) -> dict[str, str | None]:
    if src.no_defaults:
        return {}
    return client_options(src.defaults_file, groups, extra_file=src.extra_file, group_suffix=src.group_suffix)

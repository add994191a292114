"""What a process's threads are doing, from /proc only (state, wchan, kernel stack): never ptrace, never stop."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

MAX_THREADS = 20000  # a snapshot reads at most this many threads of one process
_STACK_LINE = re.compile(r"^\[<[0-9a-fx]+>\]\s+(?P<name>[^+\s]+)")


@dataclass(frozen=True)
class ThreadNow:
    """One thread at one moment: /proc/PID/task/TID/{comm,stat,wchan,stack}."""

    tid: int
    comm: str
    state: str  # R S D T t Z X I ...
    wchan: str
    kernel: tuple[str, ...]  # kernel stack, root first, names without offsets ('' when unreadable)


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="backslashreplace") as fh:
            return fh.read()
    except OSError:
        return ""


def parse_stack(text: str) -> tuple[str, ...]:
    """/proc/TID/stack ('[<0>] futex_wait_queue+0x60/0x90' per line, leaf first) as names, root first."""
    names = [m["name"] for line in text.splitlines() if (m := _STACK_LINE.match(line.strip()))]
    return tuple(reversed(names))


def parse_state(stat: str) -> str:
    """The state letter of a /proc/TID/stat line (the field after the parenthesised comm)."""
    rest = stat[stat.rfind(")") + 1 :].split()
    return rest[0] if rest else "?"


def read_thread(pid: int, tid: int) -> ThreadNow | None:
    """One thread, or None when it has exited."""
    base = f"/proc/{pid}/task/{tid}"
    stat = _read(f"{base}/stat")
    if not stat:
        return None
    wchan = _read(f"{base}/wchan").strip()
    return ThreadNow(
        tid,
        _read(f"{base}/comm").strip(),
        parse_state(stat),
        "" if wchan == "0" else wchan,
        parse_stack(_read(f"{base}/stack")),
    )


def snapshot(pid: int) -> tuple[ThreadNow, ...]:
    """Every thread of ``pid`` now (at most MAX_THREADS); () when the process is gone."""
    try:
        tids = sorted(int(t) for t in os.listdir(f"/proc/{pid}/task") if t.isdigit())[:MAX_THREADS]
    except OSError:
        return ()
    return tuple(t for tid in tids if (t := read_thread(pid, tid)) is not None)


def stacks_readable(pid: int) -> bool:
    """Whether /proc shows kernel stacks here (root only; some kernels hide them)."""
    return bool(_read(f"/proc/{pid}/task/{pid}/stack")) or os.path.exists(f"/proc/{pid}/task/{pid}/stack")

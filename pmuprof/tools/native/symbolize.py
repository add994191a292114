"""Name binary offsets with pmuprof-perfdata --symbolize: the perf.data reader's symbols and inline chains."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

from .perfdata import perfdata_path

SYMBOLIZE_MAX_S = 600.0  # a whole off-CPU capture's distinct addresses; the reader loads each binary once

# (pid whose /proc/PID/root holds the file, file offset, path) -> (name perf prints or "", inlined calls
# innermost first); the offset of a return address is already the call's last byte.
Query = tuple[int, int, str]
Answer = tuple[str, tuple[str, ...]]


def symbolize(queries: Sequence[Query]) -> list[Answer] | None:
    """Answers in the queries' order, or None when pmuprof-perfdata is not built or fails."""
    binary = perfdata_path()
    if binary is None or not queries:
        return None if binary is None else []
    text = "".join(
        f"{pid}\t{off:x}\t{path}\n"
        for pid, off, path in queries
        if "\n" not in path and "\t" not in path and path.startswith("/")
    )
    if text.count("\n") != len(queries):
        return None  # a path the line format cannot carry: name nothing here rather than misalign
    try:
        proc = subprocess.run(
            [str(binary), "--symbolize"],
            input=text,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=SYMBOLIZE_MAX_S,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = proc.stdout.split("\n")[: len(queries)]
    if proc.returncode != 0 or len(lines) != len(queries):
        return None
    return [(fields[0], tuple(f for f in fields[1:] if f)) for fields in (line.split("\t") for line in lines)]


__all__ = ["Answer", "Query", "symbolize"]

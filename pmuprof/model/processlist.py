"""processlist.tsv as arrays: one row per (second, connection thread) polled during the capture.

Written by capture/mysql/poll.py: ``second tid id user db command state time digest`` after a ``#``
header line. Text columns are kept as codes into a table of distinct values (a capture of an hour
with hundreds of connections is tens of thousands of rows, but few distinct states and digests).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Iterator

import numpy as np

from ..infile import Refused, evidence_bytes

TEXT_COLUMNS = ("user", "db", "command", "state", "digest")
NEAR_S = 1  # a sample may join the poll of the second before or after its own (polls are ~1 s apart)


@dataclass(frozen=True, eq=False)
class Polled:
    """Rows sorted by (tid, second); ``codes[col][i]`` indexes ``values[col]``."""

    seconds: np.ndarray  # int64
    tids: np.ndarray  # int64
    ids: np.ndarray  # int64: the processlist (connection) id
    codes: dict[str, np.ndarray]
    values: dict[str, tuple[str, ...]]

    def __len__(self) -> int:
        return len(self.tids)

    def value(self, column: str, row: int) -> str:
        return self.values[column][int(self.codes[column][row])]

    def connections(self) -> dict[int, tuple[int, str]]:
        """tid -> (connection id, user) as last polled."""
        users, codes = self.values["user"], self.codes["user"]
        return {
            int(t): (int(i), users[int(c)]) for t, i, c in zip(self.tids.tolist(), self.ids.tolist(), codes.tolist())
        }

    def lookup(self, tids: np.ndarray, seconds: np.ndarray) -> np.ndarray:
        """For each (tid, second), the row of that thread polled in that second, else in the nearest
        second within NEAR_S; -1 when the thread was not a (non-sleeping) connection then."""
        out = np.full(len(tids), -1, dtype=np.int64)
        if not len(self) or not len(tids):
            return out
        keys = (self.tids << 32) | self.seconds
        want_tid = np.asarray(tids, dtype=np.int64)
        want_sec = np.asarray(seconds, dtype=np.int64)
        ok = (want_tid >= 0) & (want_sec >= 0)
        for delta in (0, -1, 1) if NEAR_S else (0,):
            todo = np.flatnonzero(ok & (out < 0))
            if not len(todo):
                break
            key = (want_tid[todo] << 32) | (want_sec[todo] + delta)
            at = np.minimum(np.searchsorted(keys, key), len(keys) - 1)
            hit = keys[at] == key
            out[todo[hit]] = at[hit]
        return out


def _cells(line: str) -> list[str] | None:
    """A row's nine cells; None for a line that is not a row (comments and blank lines are not rows either)."""
    cells = line.split("\t")
    if len(cells) != 9 or not cells[0].isdigit() or not cells[1].isdigit():
        return None
    return cells


def _rows(text: str) -> Iterator[tuple[int, str, list[str] | None]]:
    """(line number, line, its cells or None) of every line that is neither blank nor a # comment."""
    for number, line in enumerate(text.split("\n"), 1):
        if line and not line.startswith("#"):
            yield number, line, _cells(line)


def damage(text: str) -> str:
    """What is wrong with processlist.tsv's text ("" when every line is a row)."""
    bad = [number for number, _, cells in _rows(text) if cells is None]
    if not bad:
        return ""
    return (
        f"{len(bad):,} line(s) are not processlist rows (the first: line {bad[0]}), left out of the "
        "CPU by state, statement and user tables"
    )


def parse(text: str) -> Polled:
    """The table of processlist.tsv's text (lines that are not nine tab-separated cells are skipped:
    damage() says how many)."""
    cols: dict[str, list[str]] = {c: [] for c in TEXT_COLUMNS}
    secs: list[int] = []
    tids: list[int] = []
    ids: list[int] = []
    for _, _, cells in _rows(text):
        if cells is None:
            continue
        secs.append(int(cells[0]))
        tids.append(int(cells[1]))
        ids.append(int(cells[2]) if cells[2].isdigit() else -1)
        for name, cell in zip(("user", "db", "command", "state"), cells[3:7]):
            cols[name].append(cell)
        cols["digest"].append(cells[8])
    sec_a, tid_a = np.asarray(secs, dtype=np.int64), np.asarray(tids, dtype=np.int64)
    order = np.lexsort((sec_a, tid_a))
    codes, values = {}, {}
    for name, cells in cols.items():
        uniq, inverse = (
            np.unique(np.asarray(cells, dtype=object).astype(str), return_inverse=True)
            if cells
            else (np.zeros(0, str), np.zeros(0, np.int64))
        )
        codes[name] = inverse.reshape(-1)[order].astype(np.int32)
        values[name] = tuple(uniq.tolist())
    return Polled(
        sec_a[order],
        tid_a[order],
        np.asarray(ids, dtype=np.int64)[order] if ids else np.zeros(0, np.int64),
        codes,
        values,
    )


def _text(path: Path) -> tuple[str | None, str]:
    """(its text or None, why it is not read): a regular file of this user or root (infile.open_evidence)."""
    try:
        raw = evidence_bytes(path)
    except OSError as err:
        return None, (err.why if isinstance(err, Refused) else os.strerror(err.errno or 0)) + ": left out of the report"
    return (None if raw is None else raw.decode("utf-8", errors="replace")), ""


def read(path: Path) -> Polled | None:
    """The polled processlist of a run directory, None when it has none (or it is not to be read)."""
    text, _ = _text(path)
    return None if text is None else parse(text)


def note(path: Path) -> str:
    """A warning for a damaged or refused processlist.tsv ("" when it is sound or absent)."""
    text, why = _text(path)
    why = why or (damage(text) if text is not None else "")
    return f"{Path(path).name}: {why}" if why else ""

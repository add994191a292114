"""Samples by (stack row, thread id, second): the per-thread and per-second side of a Stacks, as arrays.

Folding keeps distinct stacks (model/stacks.py); this table keeps, beside them, how many samples of
each row each thread took in each second of the recording: one entry per distinct (row, tid,
second), never one per sample. ``tids`` are OS thread ids and ``seconds`` whole seconds of perf's
sample clock (the integer part of perf script's time field; CLOCK_MONOTONIC for pmuprof's own
captures, so seconds since boot); -1 in either means not known (a perf script text without a time
field; a tid or second too large for an int32). A folded file has no table at all
(``Profile.samples`` is None). The run directory keeps it as ``samples.tsv`` (read_tsv / write_tsv).
"""

from __future__ import annotations

import errno
from dataclasses import dataclass
from pathlib import Path
from typing import IO
from collections.abc import Callable, Iterable, Iterator, Mapping

import numpy as np

from ..infile import evidence_bytes
from .stacks import Stack, Stacks

UNKNOWN = -1
MAX_TID = 2**31 - 1
BLOCK = 1 << 18  # entries per block for work over the whole table
TSV_HEAD = "# pmuprof samples: row\ttid\tsecond\tcount"
TSV_ROWS = "# row: the stack line of stacks.folded (0: the first); tid, second: -1 when not known"


def _in_order(r: np.ndarray, t: np.ndarray, s: np.ndarray) -> bool:
    """Entries already sorted by (row, tid, second) (the folders write them so): no sort needed (equal
    neighbours are in order too: they are summed after)."""
    ok = s[1:] >= s[:-1]
    ok &= t[1:] == t[:-1]
    ok |= t[1:] > t[:-1]
    ok &= r[1:] == r[:-1]
    ok |= r[1:] > r[:-1]
    return bool(ok.all())


def _order(r: np.ndarray, t: np.ndarray, s: np.ndarray) -> np.ndarray:
    """The (row, tid, second) order: one argsort of a packed key when the three fit in 63 bits (equal
    keys in any order: they are summed after)."""
    lo = [int(a.min()) for a in (r, t, s)]
    bits = [max(int(a.max()) - m, 0).bit_length() for a, m in zip((r, t, s), lo)]
    if sum(bits) > 63:
        return np.lexsort((s, t, r))
    key = r.astype(np.int64)
    key -= lo[0]
    key <<= bits[1] + bits[2]
    part = t.astype(np.int64)
    part -= lo[1]
    part <<= bits[2]
    key |= part
    part = s - lo[2]
    key |= part
    del part
    return np.argsort(key)


def _ints(values: Iterable[int] | np.ndarray) -> np.ndarray:
    """An integer column, flat; shared with the input when it is an integer array already."""
    out = np.asarray(values).reshape(-1)
    return out if out.dtype.kind in "iu" else out.astype(np.int64)


def _counts(values: np.ndarray) -> np.ndarray:
    """A count column: int32 when every count fits (nearly always: an entry is one thread's samples
    of one stack in one second), else int64 (no copy when it is one of those already)."""
    if len(values) and (int(values.max()) > MAX_TID or int(values.min()) < -MAX_TID):
        return values.astype(np.int64, copy=False)
    return values.astype(np.int32, copy=False)


def _int32(values: np.ndarray) -> np.ndarray:
    """An int32 column: values below UNKNOWN or past MAX_TID become UNKNOWN (no copy when the column
    is int32 with nothing to change)."""
    bad = values < UNKNOWN
    if values.dtype.itemsize > 4 or values.dtype.kind == "u":
        bad |= values > MAX_TID
    if bad.any():
        values = np.where(bad, UNKNOWN, values)
    return values.astype(np.int32, copy=False)


@dataclass(frozen=True, eq=False)
class Samples:
    """Aligned arrays, one entry per distinct (row, tid, second); sorted by (row, tid, second)."""

    rows: np.ndarray  # int32: the row of the Stacks this table goes with
    tids: np.ndarray  # int32
    seconds: np.ndarray  # int32
    counts: np.ndarray  # int32, or int64 when an entry holds 2**31 samples or more

    @classmethod
    def build(
        cls,
        rows: Iterable[int] | np.ndarray,
        tids: Iterable[int] | np.ndarray,
        seconds: Iterable[int] | np.ndarray,
        counts: Iterable[int] | np.ndarray,
    ) -> Samples:
        """Equal (row, tid, second) entries summed, entries with no samples dropped, sorted.

        Columns are kept in their final types from the start (no int64 copy of the int32 ones) and an
        input column is shared, not copied, when nothing in it changes: a table of millions of
        entries is built with few temporaries of its size."""
        r = _ints(rows).astype(np.int32, copy=False)  # rows index a Stacks: below 2**31
        t = _int32(_ints(tids))
        s = _int32(_ints(seconds))
        c = _counts(_ints(counts))
        keep = c > 0
        if not keep.all():
            r, t, s, c = r[keep], t[keep], s[keep], c[keep]
        del keep
        if len(r) > 1:
            if not _in_order(r, t, s):
                order = _order(r, t, s)
                r, t, s, c = r[order], t[order], s[order], c[order]
                del order
            new = np.empty(len(r), dtype=bool)
            new[0] = True
            np.not_equal(r[1:], r[:-1], out=new[1:])
            new[1:] |= t[1:] != t[:-1]
            new[1:] |= s[1:] != s[:-1]
            if not new.all():
                c = _counts(np.add.reduceat(c, np.flatnonzero(new), dtype=np.int64))
                r, t, s = r[new], t[new], s[new]
        given = [a for a in (rows, tids, seconds, counts) if isinstance(a, np.ndarray) and a.flags.writeable]
        return cls.frozen(*(a.copy() if any(np.may_share_memory(a, g) for g in given) else a for a in (r, t, s, c)))

    @classmethod
    def frozen(cls, rows: np.ndarray, tids: np.ndarray, seconds: np.ndarray, counts: np.ndarray) -> Samples:
        """A table of arrays already summed and sorted, made read-only."""
        out = cls(rows, tids, seconds, counts)
        for arr in (out.rows, out.tids, out.seconds, out.counts):
            arr.setflags(write=False)
        return out

    @classmethod
    def empty(cls) -> Samples:
        return cls.build([], [], [], [])

    def __len__(self) -> int:
        return len(self.counts)

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    @property
    def has_tids(self) -> bool:
        return bool((self.tids >= 0).any())

    @property
    def has_time(self) -> bool:
        return bool((self.seconds >= 0).any())

    def span(self) -> tuple[int, int] | None:
        """(first, last) second with samples, None without times."""
        known = self.seconds[self.seconds >= 0]
        return (int(known.min()), int(known.max())) if len(known) else None

    def per_row(self, nrows: int) -> np.ndarray:
        """Samples per stack row (what Stacks.counts must hold for the table to belong to it)."""
        return np.bincount(self.rows, weights=self.counts, minlength=nrows).astype(np.int64)

    def matches(self, stacks: Stacks) -> bool:
        """The table covers exactly the samples of ``stacks``, row for row."""
        if len(self) and (int(self.rows.min()) < 0 or int(self.rows.max()) >= len(stacks)):
            return False
        return bool(np.array_equal(self.per_row(len(stacks)), stacks.counts))

    # -- following the Stacks through its changes ---------------------------------------------------

    def remap(self, new_row: np.ndarray) -> Samples:
        """Rows renumbered by ``new_row[old]`` (merged rows summed); a row mapped to -1 is dropped."""
        rows = np.asarray(new_row, dtype=np.int64).astype(np.int32)[self.rows] if len(self) else np.zeros(0, np.int32)
        keep = rows >= 0
        if keep.all():  # the columns shared while the table is rebuilt, not copied
            rows.setflags(write=False)
            return Samples.build(rows, self.tids, self.seconds, self.counts)
        return Samples.build(rows[keep], self.tids[keep], self.seconds[keep], self.counts[keep])

    def take(self, rows: np.ndarray, nrows: int) -> Samples:
        """The table of ``Stacks.take(rows)`` (sorted row indices or a boolean mask over ``nrows`` rows)."""
        picked = np.flatnonzero(rows) if rows.dtype == bool else np.asarray(rows, dtype=np.int64)
        new_row = np.full(nrows, -1, dtype=np.int64)
        new_row[picked] = np.arange(len(picked))
        if len(picked) > 1 and not (np.diff(picked) > 0).all():
            return self.remap(new_row)
        # rows kept in their order: the entries stay sorted and distinct, nothing to sort or merge
        mapped = new_row[self.rows] if len(self) else np.zeros(0, np.int64)
        keep = mapped >= 0
        return Samples.frozen(mapped[keep].astype(np.int32), self.tids[keep], self.seconds[keep], self.counts[keep])

    # -- views ------------------------------------------------------------------------------------

    def by_key(self, key: np.ndarray) -> dict[int, int]:
        """Samples summed by an integer key aligned with the entries (e.g. ``self.tids``)."""
        uniq, inverse = np.unique(key, return_inverse=True)
        sums = np.bincount(inverse.reshape(-1), weights=self.counts, minlength=len(uniq))
        return {int(k): int(v) for k, v in zip(uniq.tolist(), sums.tolist())}

    def per_second(self) -> dict[int, int]:
        return self.by_key(self.seconds) if len(self) else {}

    def per_tid(self) -> dict[int, int]:
        return self.by_key(self.tids) if len(self) else {}

    def cells(
        self, group_of: Callable[[int, int], np.ndarray], first: int, width: int, cap: int | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Samples per (group, second) over the timed entries, sorted by (group, second): (groups,
        seconds less ``first``, samples). ``group_of(lo, hi)`` gives entries lo..hi's groups (-1: left
        out); ``width`` bounds the seconds from ``first``. Pairs are merged a block of entries at a
        time, so they never grow past ``cap`` plus one block's: None once past ``cap``."""
        keys, sums = np.zeros(0, np.int64), np.zeros(0, np.int64)
        for lo in range(0, len(self), BLOCK):
            group, secs = group_of(lo, min(lo + BLOCK, len(self))), self.seconds[lo : lo + BLOCK]
            ok = (group >= 0) & (secs >= 0)
            uniq, inverse = np.unique(
                np.concatenate((keys, group[ok].astype(np.int64) * width + (secs[ok] - first))), return_inverse=True
            )
            if cap is not None and len(uniq) > cap:
                return None
            weights = np.concatenate((sums, self.counts[lo : lo + BLOCK][ok]))
            keys, sums = uniq, np.bincount(inverse.reshape(-1), weights=weights, minlength=len(uniq)).astype(np.int64)
        return keys // width, keys % width, sums

    def stacks_where(self, stacks: Stacks, pick: np.ndarray) -> Stacks:
        """The stacks of the entries ``pick`` marks (a boolean over entries), summed per row."""
        counts = np.bincount(self.rows[pick], weights=self.counts[pick], minlength=len(stacks)).astype(np.int64)
        keep = counts > 0
        part = stacks.take(keep)
        return Stacks(part.frames, part.ids, part.offsets, counts[keep])

    def items(self, stacks: Stacks) -> Iterator[tuple[tuple[Stack, int, int], int]]:
        """((stack, tid, second), samples) per entry: the table spelled with its Stacks' tuples."""
        for r, t, s, c in zip(self.rows.tolist(), self.tids.tolist(), self.seconds.tolist(), self.counts.tolist()):
            yield (stacks.row(r), t, s), c

    def as_dict(self, stacks: Stacks) -> dict[tuple[Stack, int, int], int]:
        """The table keyed by stack tuples: equal for two folders whatever order their rows are in."""
        return dict(self.items(stacks))


def from_keyed(stacks: Stacks, keyed: Mapping[tuple[Stack, int, int], int]) -> Samples:
    """A table from {(stack, tid, second): samples} (the Python folder's form) against ``stacks``' rows."""
    index = {stack: i for i, stack in enumerate(stacks)}
    n = len(keyed)
    rows = np.fromiter((index[k[0]] for k in keyed), dtype=np.int64, count=n)
    tids = np.fromiter((k[1] for k in keyed), dtype=np.int64, count=n)
    secs = np.fromiter((k[2] for k in keyed), dtype=np.int64, count=n)
    return Samples.build(rows, tids, secs, np.fromiter(keyed.values(), dtype=np.int64, count=n))


# -- samples.tsv ------------------------------------------------------------------------------------


def write_tsv(out: IO[str], samples: Samples, file_order: np.ndarray | None = None) -> None:
    """``row\\ttid\\tsecond\\tcount`` lines after two ``#`` lines; ``file_order[i]`` is the line of
    stacks.folded that Stacks row i was written to (None: the same order)."""
    out.write(TSV_HEAD + "\n" + TSV_ROWS + "\n")
    table = samples if file_order is None else samples.remap(file_order)
    cols = np.stack([table.rows.astype(np.int64), table.tids.astype(np.int64), table.seconds, table.counts], axis=1)
    for lo in range(0, len(cols), 65536):
        out.write("".join(f"{r}\t{t}\t{s}\t{c}\n" for r, t, s, c in cols[lo : lo + 65536].tolist()))


class BadTable(ValueError):
    """samples.tsv is not a table of this shape (its line number and why)."""


def parse_tsv(text: str) -> Samples:
    """The table of ``write_tsv``'s text; BadTable when a line is not four integers."""
    body = [ln for ln in text.split("\n") if ln and not ln.startswith("#")]
    if not body:
        return Samples.empty()
    try:
        values = np.array(" ".join(body).replace("\t", " ").split(), dtype=np.int64)
    except (ValueError, OverflowError) as err:
        raise BadTable(f"a value is not an integer ({err})") from err
    if len(values) != 4 * len(body) or not all(ln.count("\t") == 3 for ln in body):
        raise BadTable("a line does not have four tab-separated columns")
    cols = values.reshape(-1, 4)
    if (cols[:, 0] < 0).any() or (cols[:, 3] < 0).any():
        raise BadTable("a row or count is negative")
    if (cols[:, 0] > MAX_TID).any():
        raise BadTable("a row number is too large")
    return Samples.build(cols[:, 0], cols[:, 1], cols[:, 2], cols[:, 3])


def read_tsv(path: Path) -> Samples:
    """A run directory's samples.tsv (through infile.open_evidence: a regular file of this user or root)."""
    raw = evidence_bytes(path)
    if raw is None:
        raise FileNotFoundError(errno.ENOENT, "no such file", str(path))
    return parse_tsv(raw.decode("ascii", errors="replace"))

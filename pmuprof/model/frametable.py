"""A frame table of ASCII names as one string and their ends: a name is made when asked for (issue 34 item 4).

A tuple of 2 M distinct names (JIT code, generated symbols) took 184 MiB as Python strings; this takes the
names' bytes and 8 bytes of end each (95 MB). The names in sorted order (``order``) are found by sorting
blocks and merging them, and names holding a piece of text are found in the text itself, so all names are
never objects at once.
"""

from __future__ import annotations

import heapq
import re
from functools import cached_property
from typing import overload
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

_BLOCK = 1 << 16  # names made at once when the table is walked or sorted


class FrameTable(Sequence[str]):
    """Names ``text[ends[i-1]:ends[i]]`` (``ends[-1]`` before the first), each made on access."""

    def __init__(self, text: str, ends: np.ndarray) -> None:
        self.text = text
        self.ends: np.ndarray = np.ascontiguousarray(ends, dtype=np.int64)
        self.ends.setflags(write=False)

    @classmethod
    def of(cls, names: Iterable[str]) -> FrameTable | tuple[str, ...]:
        """A FrameTable of ``names`` when they are all ASCII (one byte a character), else a tuple of them."""
        listed = names if isinstance(names, (list, tuple)) else list(names)
        text = "".join(listed)
        if not text.isascii():
            return tuple(listed)
        ends = np.cumsum(np.fromiter((len(n) for n in listed), dtype=np.int64, count=len(listed)))
        return cls(text, ends)

    def __len__(self) -> int:
        return len(self.ends)

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> list[str]: ...

    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        i = int(i)  # a numpy integer too
        if i < 0:
            i += len(self.ends)
        if not 0 <= i < len(self.ends):
            raise IndexError("frame table index out of range")
        return self.text[int(self.ends[i - 1]) if i else 0 : int(self.ends[i])]

    def __iter__(self) -> Iterator[str]:
        text, start = self.text, 0
        for lo in range(0, len(self.ends), _BLOCK):
            for end in self.ends[lo : lo + _BLOCK].tolist():
                yield text[start:end]
                start = end

    def __contains__(self, name: object) -> bool:
        return any(n == name for n in self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrameTable):
            return self.text == other.text and np.array_equal(self.ends, other.ends)
        if isinstance(other, (tuple, list)):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[type[FrameTable], tuple[str, np.ndarray]]:
        return FrameTable, (self.text, np.asarray(self.ends))

    def containing(self, piece: str) -> np.ndarray:
        """The ids (ascending) of the names that hold ``piece`` (not empty), found in the text: every
        place it starts, overlapping ones too (a place that runs into the next name is not that name's)."""
        starts = np.fromiter((m.start() for m in re.finditer(f"(?={re.escape(piece)})", self.text)), dtype=np.int64)
        ids = np.searchsorted(self.ends, starts, side="right")  # the name each place is in (never past the last)
        return np.unique(ids[starts + len(piece) <= self.ends[ids]])

    @cached_property
    def order(self) -> np.ndarray:
        """Frame ids sorted by name, equal names by id (what a stable argsort gives): each block of names
        sorted alone, then the blocks merged, a name made once per step."""
        blocks = []
        for lo in range(0, len(self), _BLOCK):
            names = np.empty(min(_BLOCK, len(self) - lo), dtype=object)
            names[:] = self[lo : lo + _BLOCK]
            blocks.append(np.argsort(names, kind="stable").astype(np.int64) + lo)
            del names
        if len(blocks) <= 1:
            return blocks[0] if blocks else np.zeros(0, np.int64)
        merged = heapq.merge(*(_ids(b) for b in blocks), key=self.__getitem__)
        return np.fromiter(merged, dtype=np.int64, count=len(self))


def _ids(block: np.ndarray) -> Iterator[int]:
    for lo in range(0, len(block), 4096):  # a few thousand ids as Python ints at a time, per block
        ids: list[int] = block[lo : lo + 4096].tolist()
        yield from ids


class Permuted(Sequence[str]):
    """``[table[i] for i in ids]`` as a view: names made on access."""

    def __init__(self, table: Sequence[str], ids: np.ndarray) -> None:
        self.table, self.ids = table, ids

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, k: int) -> str: ...

    @overload
    def __getitem__(self, k: slice) -> list[str]: ...

    def __getitem__(self, k: int | slice) -> str | list[str]:
        if isinstance(k, slice):
            return [self.table[int(i)] for i in self.ids[k].tolist()]
        return self.table[int(self.ids[k])]

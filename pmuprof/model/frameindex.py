"""Frame name → frame id over a frame table, answering as a dict would, in two arrays (memory per name: 16 B)."""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping, Sequence

import numpy as np


class FrameIndex(Mapping[str, int]):
    """``{name: i for i, name in enumerate(frames)}`` without a dict entry per name: the names' hashes,
    sorted, and where each sits in the table. A table of 2 M distinct names (JIT code, generated symbols)
    took 116 MiB as a dict; this takes 32 MB. Like the dict, a name listed twice gives its last id."""

    def __init__(self, frames: Sequence[str]) -> None:
        self.frames = frames
        hashes = np.fromiter((hash(f) for f in frames), dtype=np.int64, count=len(frames))
        self._order = np.argsort(hashes, kind="stable")
        self._hashes = hashes[self._order]

    def _find(self, name: object) -> int:
        if not isinstance(name, Hashable):
            raise TypeError(f"unhashable type: '{type(name).__name__}'")
        h = hash(name)
        lo = int(np.searchsorted(self._hashes, h, side="left"))
        hi = int(np.searchsorted(self._hashes, h, side="right"))
        for k in range(hi - 1, lo - 1, -1):  # the last of equal names, as the dict keeps it
            i = int(self._order[k])
            if self.frames[i] == name:
                return i
        return -1

    def __getitem__(self, name: str) -> int:
        i = self._find(name)
        if i < 0:
            raise KeyError(name)
        return i

    def __contains__(self, name: object) -> bool:
        return self._find(name) >= 0

    def __iter__(self) -> Iterator[str]:
        seen = dict.fromkeys(self.frames)  # only when asked: the names once each, in table order
        return iter(seen)

    def __len__(self) -> int:
        return len(dict.fromkeys(self.frames))

"""Frame-name patterns: globs (``*``, ``?``) matched whole, or ``re:`` regexes searched; bounded per frame."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import overload
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from ..model.frametable import FrameTable
from ..model.labels import without_kernel_suffix
from .globs import MAX_MATCH_CHARS, GlobSet, Matcher, checked_regex

_TEMPLATE_SPACE = re.compile(r"\s+>")

# Frames that only say "a lock is being taken/waited for"; skipped when naming the callers
# that explain a hot frame (the nearest non-lock parents).
LOCK_WRAPPERS = (
    "ut_delay",
    "os_rmb",
    "my_cpu_relax",
    "srw_pause",
    "mutex_spin_wait",
    "mutex_enter*",
    "mutex_exit*",
    "pfs_mutex_*",
    "pfs_rw_lock_*",
    "rw_lock_*",
    "sync_array_*",
    "os_event*",
    "os_event::*",
    "os_fast_mutex_*",
    "PolicyMutex<*",
    "TTAS*",
    "*::spin_and_try_lock*",
    "*::ttas*",
    "*Mutex<*>::enter*",
    "*Mutex<*>::try_lock*",
    "*Mutex<*>::wait*",
    "Fil_shard::mutex_acquire*",
    "srw_*",
    "ssux_lock*",
    "sux_lock*",
    "*::wait_and_lock*",
    "*::wr_wait*",
    "*::rd_wait*",
    "*::wr_lock*",
    "*::rd_lock*",
    "*::u_lock*",
    "*::psi_wr_lock*",
    "*::psi_rd_lock*",
    "pthread_mutex_*",
    "pthread_rwlock_*",
    "pthread_spin_*",
    "__pthread_mutex_*",
    "__lll_lock_wait*",
    "___pthread_mutex_*",
    "futex_*",
    "__futex*",
    "syscall",
    "native_queued_spin_lock_slowpath",
    "queued_spin_lock_slowpath",
    "_raw_spin_lock*",
    "do_futex",
    "__x64_sys_futex",
    "do_syscall_64",
    "entry_SYSCALL_64*",
    "spin_lock",
    "spin_unlock",
    "ttas_*",
    "*_spin_lock",
    "*_spin_wait",
    # thread entry points say nothing about why a frame is hot
    "start_thread",
    "clone",
    "clone3",
    "__clone*",
    "os_thread_start*",
    "pfs_spawn_thread",
    "thread_start",
)


# Leaf frames that burn CPU polling a latch (PAUSE loops), MySQL and MariaDB spellings.
SPIN_LEAVES = (
    "ut_delay",
    "my_cpu_relax",
    "srw_pause",
    "mutex_spin_wait",
    "rw_lock_s_lock_spin*",
    "rw_lock_x_lock_wait*",
    "rw_lock_x_lock_func*",
    "rw_lock_sx_lock_func*",
    "*::spin_and_try_lock*",
    "TTAS*::ttas*",
    "srw_mutex_impl<true>::wait_and_lock*",
    "srw_spin_mutex::wait_and_lock*",
    "ssux_lock_impl<true>::wr_wait*",
    "ssux_lock_impl<true>::rd_wait*",
    "ssux_lock_impl<true>::read_lock*",
    "ssux_lock_impl<true>::write_lock*",
    "ssux_lock_impl<true>::update_lock*",
    "ssux_lock_impl<true>::rd_lock_spin*",
    "srw_lock_<true>::rd_wait*",
    "srw_lock_<true>::wr_wait*",
    "srw_lock_impl<true>::*wait*",
)
# Leaf frames of any latch wait: spinning, the sync array, futexes, pthread mutexes, kernel spinlocks.
WAIT_LEAVES = SPIN_LEAVES + (
    "sync_array_*",
    "os_event*",
    "*Mutex<*>::enter*",
    "PolicyMutex<*",
    "*Mutex<*>::wait*",
    "srw_mutex_impl<*>::wait_and_lock*",
    "ssux_lock_impl<*>::*wait*",
    "pthread_mutex_lock",
    "__pthread_mutex_lock*",
    "___pthread_mutex_lock*",
    "__lll_lock_wait*",
    "futex_wait*",
    "__futex_abstimed_wait*",
    "syscall",
    "native_queued_spin_lock_slowpath",
    "queued_spin_lock_slowpath",
    "__pv_queued_spin_lock_slowpath",
    "_raw_spin_lock*",
    "os_fast_mutex_*",
)
# Where InnoDB's own barriers sit: the functions that issue os_rmb / os_wmb (macros, so the fence is
# compiled into them), as read in MySQL 5.7.35 storage/innobase (sync0rw.cc, sync0rw.ic, ib0mutex.h,
# sync0arr.cc, log0log.cc, buf0buf.cc, os0thread.cc), plus buf_get_n_pending_read_ios, which issued
# os_rmb up to 5.7.17-era releases (Bug #87637; the seeds' case) and os_rmb/os_wmb/os_mb when a build
# makes them real functions. A full fence in one of these is the barrier InnoDB asked for, compiled
# as __sync_synchronize(); any other fence is the code's own ordering (MariaDB's lf_hash pins).
BARRIER_CONTEXTS = (
    "os_rmb",
    "os_wmb",
    "os_mb",
    "buf_get_n_pending_read_ios",
    "rw_lock_*",
    "TTAS*Mutex<*>::*",
    "PolicyMutex<TTAS*",
    "sync_arr_cell_can_wake_up",
    "log_write_up_to",
    "buf_pool_withdraw_blocks",
    "os_thread_create_func",
)
ALIASES = {"@spin": SPIN_LEAVES, "@wait": WAIT_LEAVES, "@lock": LOCK_WRAPPERS, "@barrier": BARRIER_CONTEXTS}


def expand(patterns: Iterable[str]) -> tuple[str, ...]:
    """Replace the built-in aliases (@spin, @wait, @lock) by their pattern lists."""
    out: list[str] = []
    for pattern in patterns:
        out.extend(ALIASES.get(pattern, (pattern,)))
    return tuple(out)


def normalize(frame: str) -> str:
    """Frame name as rules see it: no ``_[k]`` kernel suffix, no space in ``> >``."""
    return _TEMPLATE_SPACE.sub(">", without_kernel_suffix(frame))


def _without_args(name: str) -> str:
    cut = name.find("(")
    return name[:cut] if cut > 0 else name


@lru_cache(maxsize=4096)
def compile_pattern(pattern: str) -> Matcher:
    """``re:REGEX`` searches (checked by regexsafe: polynomial with a small degree); anything else is a
    glob that must match the whole name, matched without backtracking."""
    if pattern.startswith("re:"):
        return checked_regex(pattern[3:])
    return GlobSet((normalize(pattern),))


@dataclass(frozen=True)
class PatternSet:
    """Several patterns; a frame matches when any pattern matches it (with or without args).

    Only the first MAX_MATCH_CHARS characters of a name are matched (reports show it whole).
    """

    patterns: tuple[str, ...]
    compiled: tuple[Matcher, ...]

    @classmethod
    def of(cls, patterns: Iterable[str]) -> PatternSet:
        pats = tuple(patterns)
        if any(p.startswith("@") and p not in ALIASES for p in pats):
            bad = next(p for p in pats if p.startswith("@") and p not in ALIASES)
            raise re.error(f"unknown alias {bad} (known: {', '.join(ALIASES)})")
        full = expand(pats)
        globs = tuple(normalize(p) for p in full if not p.startswith("re:"))
        regexes = tuple(compile_pattern(p) for p in full if p.startswith("re:"))
        return cls(pats, ((GlobSet(globs),) if globs else ()) + regexes)

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def matches(self, frame: str) -> bool:
        name = normalize(frame[:MAX_MATCH_CHARS])
        short = _without_args(name)
        for rx in self.compiled:
            if rx.search(name) or (short is not name and rx.search(short)):
                return True
        return False

    def mask(self, names: FrameNames) -> np.ndarray:
        """``matches`` for every frame of a table at once: each glob looks only at the names that can
        hold its literal part (a sorted-name range for a literal prefix, else a substring scan)."""
        out = np.zeros(len(names.names), dtype=bool)
        for rx in self.compiled:
            if isinstance(rx, GlobSet):
                for glob in rx.globs:
                    _mark(out, names.candidates(glob), names, rx)
            else:
                _mark(out, range(len(names.names)), names, rx)
        return out


def _mark(out: np.ndarray, candidates: Iterable[int], names: FrameNames, rx: Matcher) -> None:
    full = names.names
    for i in candidates:
        if out[i]:
            continue
        name = full[i]
        short = _without_args(name)  # made here, not kept: a table of millions of names would hold them all
        if rx.search(name) or (short is not name and rx.search(short)):
            out[i] = True


class _Changed(Sequence[str]):
    """A frame table with a few names replaced (by id)."""

    def __init__(self, table: FrameTable, changed: dict[int, str]) -> None:
        self.table, self.changed = table, changed

    def __len__(self) -> int:
        return len(self.table)

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> list[str]: ...

    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        name = self.changed.get(int(i))
        return self.table[i] if name is None else name

    def __iter__(self) -> Iterator[str]:
        changed = self.changed
        for i, name in enumerate(self.table):
            yield changed.get(i, name)

    def containing(self, piece: str) -> np.ndarray:
        """The ids whose name holds ``piece``: the table's that do (a replaced one the test keeps out if it
        no longer does) and the replaced names that do."""
        mine = [i for i, name in self.changed.items() if piece in name]
        return np.union1d(self.table.containing(piece), np.asarray(mine, dtype=np.int64))


class _Sorted(Sequence[tuple[str, int]]):
    """(name, id) in sorted order, as a view (for bisect) over the names and their order."""

    def __init__(self, names: Sequence[str], order: np.ndarray) -> None:
        self.names, self.order = names, order

    def __len__(self) -> int:
        return len(self.order)

    @overload
    def __getitem__(self, k: int) -> tuple[str, int]: ...

    @overload
    def __getitem__(self, k: slice) -> list[tuple[str, int]]: ...

    def __getitem__(self, k: int | slice) -> tuple[str, int] | list[tuple[str, int]]:
        if isinstance(k, slice):
            return [self[j] for j in range(*k.indices(len(self)))]
        i = int(self.order[k])
        return self.names[i], i


@dataclass(frozen=True)
class FrameNames:
    """A frame table's names as rules see them (normalized, bounded), prepared for bulk matching: the names
    (the frame table itself where normalizing changes none) and their sorted order. Held by one matcher
    index at a time, not in a global cache."""

    names: Sequence[str]
    order: np.ndarray  # indices sorted by name, equal names by index

    @classmethod
    def of(cls, frames: Sequence[str]) -> FrameNames:
        if isinstance(frames, FrameTable):
            return cls._of_table(frames)
        names: Sequence[str] = [normalize(f[:MAX_MATCH_CHARS]) for f in frames]
        if all(n is f for n, f in zip(names, frames)):
            names = frames  # nothing to normalize (the usual case): the table itself, not a copy of it
        table = np.empty(len(names), dtype=object)
        table[:] = names
        order = np.argsort(table, kind="stable")  # as sorted() orders them, with no list of index objects
        del table
        return cls(names, order.astype(np.int32 if len(names) < 2**31 else np.int64))

    @classmethod
    def _of_table(cls, table: FrameTable) -> FrameNames:
        """A FrameTable's: its names are never all made at once. The few that normalizing changes (a kernel
        frame's ``_[k]``, ``> >``) are kept beside it, and placed in its sorted order where they now sort."""
        changed: dict[int, str] = {}
        for i, frame in enumerate(table):
            name = normalize(frame[:MAX_MATCH_CHARS])
            if name != frame:
                changed[i] = name
        if not changed:
            return cls(table, table.order)
        moved = sorted((name, i) for i, name in changed.items())
        ids = np.fromiter((i for _, i in moved), dtype=np.int64, count=len(moved))
        rest = table.order[~np.isin(table.order, ids)]  # the unchanged names, in order (by name, then id)
        view = _Sorted(table, rest)
        at = [bisect.bisect_left(view, key) for key in moved]
        return cls(_Changed(table, changed), np.insert(rest, at, ids))

    @cached_property
    def _sorted(self) -> list[str] | None:
        """The names in their sorted order, for bisect without a Python call per step (a rule set bisects a few
        hundred times a table), where they are in memory already (a list of the same strings); None for a
        FrameTable's, whose names are never all made at once."""
        if isinstance(self.names, (FrameTable, _Changed)):
            return None
        names = self.names
        return [names[i] for i in self.order.tolist()]

    def _starting(self, prefix: str) -> tuple[int, int]:
        """The range of the sorted order whose names start with ``prefix``."""
        end = prefix + "\U0010ffff"
        if self._sorted is not None:
            return bisect.bisect_left(self._sorted, prefix), bisect.bisect_left(self._sorted, end)
        view = _Sorted(self.names, self.order)  # (name, id) >= (prefix, -1) where name >= prefix
        return bisect.bisect_left(view, (prefix, -1)), bisect.bisect_left(view, (end, -1))

    def candidates(self, glob: str) -> Iterable[int]:
        """Frame indices whose name or short name can match the (normalized) glob: a short name is a
        prefix of its name, so whatever starts or contains the glob's literal part is in the name."""
        prefix = re.split(r"[*?]", glob, maxsplit=1)[0]
        if prefix:
            lo, hi = self._starting(prefix)
            found: list[int] = np.sort(self.order[lo:hi]).tolist()
            return found
        piece = max(re.split(r"[*?]", glob), key=len)
        if len(piece) < 2:
            return range(len(self.names))
        if isinstance(self.names, (FrameTable, _Changed)):  # found in the table's own text
            held: list[int] = self.names.containing(piece).tolist()
            return held
        return [i for i, name in enumerate(self.names) if piece in name]


@lru_cache(maxsize=4)
def frame_names(frames: tuple[str, ...]) -> FrameNames:
    """FrameNames for a frame table (the last few tables are kept: one per profile in use)."""
    return FrameNames.of(frames)


@lru_cache(maxsize=256)
def lock_wrappers(extra: tuple[str, ...] = ()) -> PatternSet:
    return PatternSet.of(LOCK_WRAPPERS + extra)

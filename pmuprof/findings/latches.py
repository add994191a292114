"""Latch attribution: every sample in a spin or wait path is charged to the latch it waits for.

From the leaf, a stack is walked up over kernel frames, wait frames (ut_delay, PAUSE loops,
sync_array_wait_event, os_event waits, futexes) and latch machinery (TTASEventMutex, rw_lock_*_spin,
srw/ssux members: they tell the latch type and the mode); the first frame above them is the
acquirer. The latch table (rules/knowledge/latches.yaml) names the latch an acquirer takes in this
server version, keeping only latches whose type agrees with the machinery seen. An acquirer the
table does not know is reported as "unidentified, under <acquirer>" — never under a neighbour's name.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from ..model.labels import is_inlined, is_kernel, is_unnamed
from .knowledge import Latch, LatchTable, Machinery
from .patterns import FrameNames, normalize

MAX_CALLERS = 3
TOP_CHAINS = 3
UNIDENTIFIED = "unidentified"
ALTERNATIVES = "|"  # "a|b": the acquirer takes latch a or latch b, and the stack cannot tell which
# machinery latch types -> the latch-table mapping types they are compatible with
_TYPE_OF = {
    "mutex": {"mutex"},
    "rw-lock": {"rw-lock"},
    "srw": {"srw", "mutex"},
    "ssux": {"ssux", "sux", "rw-lock"},
    "sux": {"sux"},
    "pthread-mutex": {"pthread-mutex", "mutex"},
    "sharded-rw": {"sharded-rw"},
    "prlock": {"prlock"},
    "sync-array": set(),
}


@dataclass(frozen=True)
class Chain:
    frames: tuple[str, ...]  # acquirer first, then its nearest callers
    count: int


@dataclass(frozen=True)
class LatchWaits:
    """One row of "spin and waits by latch": who waits for what, how, and from where."""

    latch: str  # latch id, or "unidentified"
    name: str  # as DBAs know it, or "unidentified, under <acquirer>"
    count: int
    share: float
    kinds: Mapping[str, int] = field(default_factory=dict)  # spin | os_wait | futex | kernel_spin | yield
    modes: Mapping[str, int] = field(default_factory=dict)  # S | X | SX | U
    chains: tuple[Chain, ...] = ()
    rule: str | None = None
    under: str = ""  # the acquirer, for an unidentified latch

    def chain_text(self, chain: Chain) -> str:
        return " ← ".join(chain.frames) or "(no callers recorded)"


@dataclass(frozen=True)
class Wait:
    kind: str
    mode: str
    types: frozenset[str]
    latch: str  # named by a machinery frame itself
    acquirer: str | None
    callers: tuple[str, ...]
    near: frozenset[str] = frozenset()  # latch types of the machinery frame nearest the acquirer


class Attributor:
    """Classifies frames once (cached per distinct name) for one server family and version."""

    def __init__(self, table: LatchTable, family: str | None, version: tuple[int, ...]) -> None:
        self.waits = [w for w in table.wait_frames if w.servers.hold(family, version)]
        self.wakes = [w for w in table.wake_frames if w.servers.hold(family, version)]
        self.machinery = [m for m in table.machinery if m.servers.hold(family, version)]
        self.maps = [(lat, m) for lat in table.latches for m in lat.mappings if m.servers.hold(family, version)]
        self.latches = {lat.id: lat for lat in table.latches}
        self._wait: dict[str, str | None] = {}
        self._mach: dict[str, Machinery | None] = {}
        self._acq: dict[str, tuple[tuple[Latch, str, str], ...]] = {}
        self._wake: dict[str, bool] = {}
        self._primed: _Primed | None = None

    def prime(self, frames: Sequence[str], names: FrameNames | None = None) -> np.ndarray:
        """Classify a whole frame table at once (bulk pattern masks, one alive at a time; an acquirer's
        kept as the few frame ids it marks); ``learn`` then fills the per-name caches for the frames of
        the rows walked, so a table of millions of names costs arrays, not a dict entry per name.

        Returns, per frame, whether it can end a wait path: a kernel, wait or machinery frame."""
        names = FrameNames.of(frames) if names is None else names
        n = len(frames)
        first_wait = _first_hit((w.patterns.mask(names) for w in self.waits), n)
        first_mach = _first_hit((m.patterns.mask(names) for m in self.machinery), n)
        wakes = _first_hit((w.patterns.mask(names) for w in self.wakes), n) >= 0
        acq = tuple(
            ((lat, m.type, a.mode, a.seldom), np.flatnonzero(a.patterns.mask(names)))
            for lat, m in self.maps
            for a in m.acquirers
        )
        self._primed = _Primed(frames, first_wait, first_mach, wakes, acq)
        kernel = np.fromiter((is_kernel(f) for f in frames), dtype=bool, count=n)
        return kernel | (first_wait >= 0) | (first_mach >= 0)

    def learn(self, ids: np.ndarray) -> None:
        """Fill the per-name caches from the primed table for the frames ``ids`` (those of the rows walked)."""
        p = self._primed
        if p is None:
            return
        ids = np.unique(ids)
        hits: dict[int, list[tuple[Latch, str, str, str]]] = {}
        if p.acquirers:  # one look-up for all acquirers' marks (a few hundred acquirers, a few ids each)
            marked = np.concatenate([m for _, m in p.acquirers])
            owner = np.repeat(np.arange(len(p.acquirers)), [len(m) for _, m in p.acquirers])
            kept = np.isin(marked, ids)
            for i, k in zip(marked[kept].tolist(), owner[kept].tolist()):  # in acquirer order, as they are listed
                hits.setdefault(i, []).append(p.acquirers[k][0])
        for i in ids.tolist():
            frame = p.frames[i]
            self._wake.setdefault(frame, bool(p.wakes[i]))
            self._wait.setdefault(frame, self.waits[p.first_wait[i]].kind if p.first_wait[i] >= 0 else None)
            self._mach.setdefault(frame, self.machinery[p.first_mach[i]] if p.first_mach[i] >= 0 else None)
            self._acq.setdefault(frame, _usual(hits.get(i, [])))

    def wakes_up(self, frame: str) -> bool:
        if frame not in self._wake:
            self._wake[frame] = any(w.patterns.matches(frame) for w in self.wakes)
        return self._wake[frame]

    def wait_kind(self, frame: str) -> str | None:
        if frame not in self._wait:
            self._wait[frame] = next((w.kind for w in self.waits if w.patterns.matches(frame)), None)
        return self._wait[frame]

    def machinery_of(self, frame: str) -> Machinery | None:
        if frame not in self._mach:
            self._mach[frame] = next((m for m in self.machinery if m.patterns.matches(frame)), None)
        return self._mach[frame]

    def acquired(self, frame: str) -> tuple[tuple[Latch, str, str], ...]:
        """(latch, mapping type, acquirer mode) for every mapping this frame is an acquirer in; a latch the
        knowledge marks ``seldom`` for this acquirer is left out when it takes another one too (5.7's
        lock_trx_release_locks takes lock_sys->mutex and its own trx->mutex: the global one is contended)."""
        if frame not in self._acq:
            self._acq[frame] = _usual(
                [
                    (lat, m.type, a.mode, a.seldom)
                    for lat, m in self.maps
                    for a in m.acquirers
                    if a.patterns.matches(frame)
                ]
            )
        return self._acq[frame]

    def classify(self, frames: tuple[str, ...]) -> Wait | None:
        """The wait a stack (root first, process root removed) is in, or None when it is not waiting."""
        j, kind, mode, latch, types, near = len(frames) - 1, "", "", "", set(), set()
        while j >= 0 and is_kernel(frames[j]):  # the kernel side of a futex or spinlock wait
            kind = kind or (self.wait_kind(frames[j]) or "")
            j -= 1
        # calls inlined at the leaf that are no wait and no latch machinery (an atomic, a relax helper)
        # are the leaf function's own body: the wait is read from the frames they are inlined into
        while j > 0 and is_inlined(frames[j]) and not self.wait_kind(frames[j]) and not self.machinery_of(frames[j]):
            j -= 1
        leaf = j
        if j >= 0 and self.wakes_up(frames[j]):
            return None  # waking waiters on unlock: not a wait
        while j >= 0:
            frame = frames[j]
            found = self.wait_kind(frame)
            mach = None if found else self.machinery_of(frame)
            if found:
                kind = kind or found
            elif mach is not None:
                kind = kind or (mach.leaf_kind if j == leaf else "")
                mode, latch = mode or mach.mode, latch or mach.latch
                near = _fits(mach)
                types |= near
            elif not (is_unnamed(frame) and (kind or types)):
                break
            j -= 1
        if not kind:
            return None
        acquirer = frames[j] if j >= 0 else None
        return Wait(kind, mode, frozenset(types), latch, acquirer, _callers(frames, j), frozenset(near))

    def attribute(self, frames: tuple[str, ...]) -> tuple[Wait, str, str] | None:
        """(wait, latch id or "unidentified", mode) for a stack in a spin or wait path, else None.

        A bare yield (no latch machinery, an acquirer the table does not know) is a thread giving
        up its CPU, not a latch wait: 10.2's purge coordinator yields in srv_do_purge.
        """
        wait = self.classify(frames)
        if wait is None:
            return None
        latch, mode = self.latch_for(wait)
        if wait.kind == "yield" and latch == UNIDENTIFIED and not wait.types:
            return None
        return wait, latch, mode

    def latch_for(self, wait: Wait) -> tuple[str, str]:
        """(latch id or "unidentified", mode) for a classified wait."""
        if wait.latch:
            return wait.latch, wait.mode
        found = self._acquired_through_inlines(wait)
        # the machinery says what kind of latch is waited for: an acquirer's latch of another kind is a
        # neighbour (buf_flush_page holds buf_pool->mutex, but spins on the page's rw-lock)
        fitting = [f for f in found if not wait.types or f[1] in wait.types]
        # the machinery the acquirer called is the most specific: an inlined sux_lock<> member takes a
        # block or index latch, never the page_hash latch its outer ssux wait could also be
        nearest = [f for f in fitting if f[1] in wait.near]
        fitting = nearest or fitting
        ids = sorted(dict.fromkeys(lat.id for lat, _, _ in fitting))
        if not ids:
            return UNIDENTIFIED, wait.mode
        mode = wait.mode or next((m for lat, _, m in fitting if m), "")
        return ALTERNATIVES.join(ids), mode  # an acquirer that takes several latches of one type: say so

    def _acquired_through_inlines(self, wait: Wait) -> tuple[tuple[Latch, str, str], ...]:
        """The acquirer's latches; an inlined helper the table does not list (btr_search_s_lock_[i] in
        10.2.11) stands for the functions it is inlined into, up to the first real frame."""
        if not wait.acquirer:
            return ()
        found = self.acquired(wait.acquirer)
        frame = wait.acquirer
        for caller in wait.callers:
            if found or not is_inlined(frame):
                break
            found, frame = self.acquired(caller), caller
        return found


def _fits(mach: Machinery) -> set[str]:
    """The latch-table mapping types a machinery frame's lock can be: its own type's, and those of the locks
    it is a member of (``inside``: the writer mutex of an ssux lock when no frame names the ssux lock)."""
    out: set[str] = set()
    for kind in (mach.latch_type, *mach.inside):
        out |= _TYPE_OF.get(kind, {kind})
    return out


def _usual(found: list[tuple[Latch, str, str, str]]) -> tuple[tuple[Latch, str, str], ...]:
    """(latch, mapping type, mode) of an acquirer's latches without the ones marked seldom for it, unless
    those are all it takes."""
    usual = [f for f in found if not f[3]]
    return tuple(f[:3] for f in (usual or found))


def candidates(key: str) -> tuple[str, ...]:
    """The latch ids a sample's latch key names: one, or the alternatives of an "a|b" key."""
    return tuple(key.split(ALTERNATIVES))


def latch_words(key: str, latches: Mapping[str, Latch], short: bool = True) -> str:
    """A latch key in words: "page latch or index tree latch" for "buf_block_lock|index_lock"."""
    known = [latches[i] for i in candidates(key) if i in latches]
    return " or ".join((lat.words if short else lat.name) for lat in known)


def unclaimed(key: str, latches: Mapping[str, Latch]) -> bool:
    """Whether a sample's latch is "a or b" where no one rule covers every alternative (the latch table's
    ``rule``): no single-latch rule may count it, and the finding for ambiguous attribution does."""
    ids = candidates(key)
    if len(ids) < 2:
        return False
    rules = {latches[i].rule if i in latches else None for i in ids}
    return len(rules) > 1 or None in rules


def _first_hit(masks: Iterable[np.ndarray], n: int) -> np.ndarray:
    """Per frame, the index of the first mask that marks it (-1: none), as the first-match loops do."""
    out = np.full(n, -1, dtype=np.int32)
    for k, mask in enumerate(masks):
        out[(out < 0) & mask] = k
    return out


@dataclass(frozen=True)
class _Primed:
    """A frame table classified in bulk: first wait / machinery entry per frame (-1: none), whether it wakes
    waiters, and per acquirer (latch, mapping type, mode, seldom) the ids of the frames it marks."""

    frames: Sequence[str]
    first_wait: np.ndarray
    first_mach: np.ndarray
    wakes: np.ndarray
    acquirers: tuple[tuple[tuple[Latch, str, str, str], np.ndarray], ...]


def _callers(frames: tuple[str, ...], at: int) -> tuple[str, ...]:
    """The nearest named callers above frames[at] (none when the stack ended inside the wait)."""
    out: list[str] = []
    if at <= 0:
        return ()
    for frame in reversed(frames[:at]):
        if is_unnamed(frame) or (out and out[-1] == frame):
            continue
        out.append(frame)
        if len(out) == MAX_CALLERS:
            break
    return tuple(out)


@dataclass(frozen=True)
class WaitTable:
    """Every row of the process in a spin or wait path: its wait, latch key and mode, as arrays."""

    rows: np.ndarray  # row index per wait
    waits: tuple[Wait, ...]
    latch: tuple[str, ...]  # latch id or "unidentified" (or "a|b") per wait
    mode: tuple[str, ...]
    counts: np.ndarray

    def latch_mask(self, wanted: frozenset[str]) -> np.ndarray:
        """Waits attributed to the wanted latches only: an "a|b" wait counts when both a and b are wanted
        (a rule for latch a alone must not claim a sample that may be b's)."""
        return np.fromiter((set(candidates(k)) <= wanted for k in self.latch), dtype=bool, count=len(self.latch))

    def unclaimed_mask(self, latches: Mapping[str, Latch], wanted: frozenset[str] = frozenset()) -> np.ndarray:
        """Waits attributed to "a or b" where no one rule covers both (findings/latches.py ``unclaimed``),
        among those naming a wanted latch when ``wanted`` is given."""
        return np.fromiter(
            (unclaimed(k, latches) and (not wanted or bool(wanted & set(candidates(k)))) for k in self.latch),
            dtype=bool,
            count=len(self.latch),
        )


def attribute(waits: WaitTable, total: int, latches: Mapping[str, Latch]) -> tuple[LatchWaits, ...]:
    """Rows of waits by latch for one process's wait table (findings/stackmatch.py), most samples first."""
    counts: Counter[tuple[str, str]] = Counter()
    kinds: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    modes: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    chains: dict[tuple[str, str], Counter[tuple[str, ...]]] = defaultdict(Counter)
    for wait, latch, mode, count in zip(waits.waits, waits.latch, waits.mode, waits.counts.tolist()):
        key = (latch, (wait.acquirer or "") if latch == UNIDENTIFIED else "")
        counts[key] += count
        kinds[key][wait.kind] += count
        if mode:
            modes[key][mode] += count
        chains[key][((wait.acquirer,) if wait.acquirer else ()) + wait.callers] += count
    rows = [_row(key, n, total, kinds[key], modes[key], chains[key], latches) for key, n in counts.items()]
    return tuple(sorted(rows, key=lambda r: (-r.count, r.latch, r.under)))


def _row(
    key: tuple[str, str],
    count: int,
    total: int,
    kinds: Counter[str],
    modes: Counter[str],
    chains: Counter[tuple[str, ...]],
    latches: Mapping[str, Latch],
) -> LatchWaits:
    latch_id, under = key
    known = [latches[i] for i in candidates(latch_id) if i in latches]
    if known:  # one latch by its name; alternatives in a few words each: "page latch or index tree latch"
        name = latch_words(latch_id, latches, short=len(known) > 1)
    elif under:
        name = f"unidentified, under {normalize(under)}"
    else:
        name = "unidentified (the stack ends inside the wait: its callers were lost)"
    rules = {lat.rule for lat in known}
    top = tuple(Chain(frames, n) for frames, n in sorted(chains.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_CHAINS])
    return LatchWaits(
        latch_id,
        name,
        count,
        round(count / total, 6) if total else 0.0,
        dict(kinds),
        dict(modes),
        top,
        rules.pop() if len(rules) == 1 else None,
        under,
    )

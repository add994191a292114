"""Where a healthy run's time went, in terms a DBA can act on: the busiest server function and what ran under it.

When no finding is above info, the verdict still says one thing worth reading. The hottest *self* frame
is often kernel work (``_raw_spin_unlock_irqrestore_[k]`` when a send wakes the client) or a libc
``memcpy``; neither is something to change. So the verdict names the server function with most
inclusive samples among the frames that are not generic (rules/knowledge/generic-frames.yaml: thread
entry, connection loop, dispatch, statement wrappers; library functions; kernel frames; unnamed code),
the end of its hot path (the deepest server function still holding half of its samples), and, when the
hottest self frame is not server code, which kernel (or library) work it is and the server function it
runs under. With the processlist joined (Profile.threads), the busiest processlist state is added.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ..analysis.threads import COLUMN_TABLES, UNGROUPED
from ..model.labels import is_kernel, is_unnamed
from ..model.profile import Profile
from ..model.stacks import Stacks
from .knowledge import GenericFrames, generic_frames

HOT_PATH_SHARE = 0.5  # the hot path goes on while its next frame holds this share of the busiest function
MAX_PATH = 64  # frames followed at most below it
UNGROUPED_STATES = UNGROUPED + (COLUMN_TABLES[0][4],)  # no connection, idle at the poll, and "(empty state)"


@dataclass(frozen=True)
class Busiest:
    """The healthy verdict's facts. Counts are samples of ``total``; names are frame labels as the flame
    graph has them ('' when there is none)."""

    total: int
    function: str = ""  # the busiest server function by inclusive samples
    samples: int = 0
    path_end: str = ""  # the deepest server function on its hot path ('' when it is the function itself)
    path_end_samples: int = 0
    leaf: str = ""  # the hottest self frame, when it is not server code (kernel or library work)
    leaf_samples: int = 0
    leaf_kind: str = ""  # "kernel" | "library" | "unnamed"
    leaf_entry: str = ""  # kernel work: the syscall or interrupt it runs in (the first frame past the entry)
    leaf_under: str = ""  # the server function it runs under, in most of its samples
    leaf_via: str = ""  # no server function above it: the library function it is called from
    state: str = ""  # the processlist state with most joined samples (threads tables), '' when not polled
    state_share: float = 0.0  # of the samples
    state_function: str = ""  # what sets that state's samples apart (analysis/threads.py)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


class ServerFrames:
    """Whether a frame id is server code a DBA can act on (not kernel, unnamed, library or generic), decided
    on first use: a profile's long tail of frames is never matched against the patterns."""

    def __init__(self, stacks: Stacks, generic: GenericFrames, library: frozenset[str]) -> None:
        self.frames, self.generic, self.library = stacks.frames, generic, library
        self.roots = frozenset(int(f) for f in np.unique(stacks.root_ids))  # process roots are no function
        self.known: dict[int, bool] = {}

    def __getitem__(self, frame: int) -> bool:
        known = self.known.get(frame)
        if known is None:
            f = self.frames[frame]
            known = not (
                frame in self.roots
                or is_kernel(f)
                or is_unnamed(f)
                or f in self.library
                or self.generic.runtime.matches(f)
                or self.generic.server.matches(f)
            )
            self.known[frame] = known
        return known


def library_functions(profile: Profile, generic: GenericFrames) -> frozenset[str]:
    """Functions whose leaf samples fell in a library DSO (pmuprof knows the DSO of leaves only)."""
    return frozenset(
        leaf.symbol
        for leaf in profile.leaves
        if leaf.symbol and generic.runtime_dsos.matches(leaf.dso.rsplit("/", 1)[-1])
    )


def busiest(profile: Profile, generic: GenericFrames | None = None) -> Busiest:
    """The healthy verdict's facts for the whole profile (every process's samples)."""
    generic = generic or generic_frames()
    st = profile.stacks
    if not st.total or not len(st.frames):
        return Busiest(total=st.total)
    server = ServerFrames(st, generic, library_functions(profile, generic))
    named = np.flatnonzero(
        np.fromiter((not (is_kernel(f) or is_unnamed(f)) for f in st.frames), dtype=bool, count=len(st.frames))
    )
    # every named frame's inclusive samples: read from the postings the rules' stack matching built (or
    # builds them once); counting the named frames' occurrences anew took over a second on 2.3 M samples
    incl = st.frame_inclusive()
    fields: dict[str, object] = {}
    for top in named[np.argsort(-incl[named], kind="stable")]:  # most inclusive first, ties by frame id
        if not incl[top]:
            break
        if server[int(top)]:
            end, end_n = _path_end(st, int(top), server)
            fields.update(
                function=st.frames[top],
                samples=int(incl[top]),
                path_end=st.frames[end] if end != top else "",
                path_end_samples=end_n if end != top else 0,
            )
            break
    fields.update(_leaf(st, server, generic))
    fields.update(_state(profile, generic))
    return Busiest(total=st.total, **fields)  # type: ignore[arg-type]


def _first_positions(st: Stacks, frame: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, positions): each row holding ``frame`` below its root, and where it first is."""
    at = np.flatnonzero(st.ids == frame)
    r = st.rows_at(at)  # a search per occurrence: no row array as long as every frame occurrence
    keep = at != st.offsets[r]
    at, r = at[keep], r[keep]
    r, first = np.unique(r, return_index=True)
    at = at[first]
    return r.astype(np.int64), at.astype(np.int64)


def _path_end(st: Stacks, frame: int, server: ServerFrames) -> tuple[int, int]:
    """The deepest server frame on ``frame``'s hot path (each next frame holding HOT_PATH_SHARE of its samples)."""
    rows, pos = _first_positions(st, frame)
    weights = st.counts[rows]
    need = weights.sum() * HOT_PATH_SHARE
    best, best_n = frame, int(weights.sum())
    for _ in range(MAX_PATH):
        deeper = pos + 1 < st.offsets[rows + 1]
        rows, pos, weights = rows[deeper], pos[deeper] + 1, weights[deeper]
        if not len(rows):
            break
        nxt = st.ids[pos]
        sums = np.bincount(nxt, weights=weights)
        top = int(np.argmax(sums))
        if sums[top] < need:
            break
        on = nxt == top
        rows, pos, weights = rows[on], pos[on], weights[on]
        if server[top]:
            best, best_n = top, int(sums[top])
    return best, best_n


def _leaf(st: Stacks, server: ServerFrames, generic: GenericFrames) -> dict[str, object]:
    """The hottest self frame when it is not server code: what it is, where it entered, what it runs under."""
    selfc = st.frame_self()
    if not selfc.any():
        return {}
    leaf = int(np.argmax(selfc))
    name = st.frames[leaf]
    if server[leaf] or generic.server.matches(name):
        return {}
    kind = "kernel" if is_kernel(name) else "unnamed" if is_unnamed(name) else "library"
    rows = np.flatnonzero((st.leaf_ids == leaf) & (st.lengths > 1))
    seen: dict[tuple[int, int], int] = {}  # (entry, caller) -> samples; caller: server, else library
    for row in rows:  # the rows of one leaf frame: few next to the profile
        ids = st.ids[st.offsets[row] + 1 : st.offsets[row + 1]]
        e = -1
        if kind == "kernel":
            e = next(
                (int(f) for f in ids if is_kernel(st.frames[f]) and not generic.kernel_entry.matches(st.frames[f])), -1
            )
        u = next((int(f) for f in ids[::-1] if server[f]), -1)
        if u < 0:  # no server frame on the stack (a library without frame pointers hides its caller)
            u = -2 - next((int(f) for f in ids[::-1] if not (is_kernel(st.frames[f]) or is_unnamed(st.frames[f]))), -1)
        key = (e if e != leaf else -1, u)
        seen[key] = seen.get(key, 0) + int(st.counts[row])
    entries: dict[int, int] = {}
    for (e, _u), n in seen.items():
        entries[e] = entries.get(e, 0) + n
    entry = _most(entries)  # the kernel work's entry first, then what calls it there
    caller = max((u for e, u in seen if e == entry), key=lambda u: (u >= 0, seen[(entry, u)], -abs(u)))
    out = {
        "leaf": name,
        "leaf_samples": int(selfc[leaf]),
        "leaf_kind": kind,
        "leaf_entry": st.frames[entry] if entry >= 0 else "",
    }
    if caller >= 0:
        out["leaf_under"] = st.frames[caller]
    elif caller < -2:
        out["leaf_via"] = st.frames[-2 - caller]
    return out


def _most(counts: dict[int, int]) -> int:
    """The frame id with most samples (-1, "none", only when nothing else has any)."""
    return max(counts, key=lambda f: (f >= 0, counts[f], -f)) if counts else -1


def _state(profile: Profile, generic: GenericFrames) -> dict[str, object]:
    """The busiest processlist state of the joined thread tables (analysis/threads.py), if polled, and the
    function that sets it apart unless that is a generic frame."""
    th = profile.threads
    if th is None or not th["polled"]:
        return {}
    table = next((t for t in th["tables"] if t["name"] == "state"), None)
    rows = [r for r in (table["rows"] if table else ()) if r["key"] not in UNGROUPED_STATES and r["samples"]]
    if not rows:
        return {}
    top = max(rows, key=lambda r: (r["samples"], r["key"]))
    fn = top["function"]
    if is_kernel(fn) or is_unnamed(fn) or generic.runtime.matches(fn) or generic.server.matches(fn):
        fn = ""
    return {"state": top["key"], "state_share": top["share"], "state_function": fn}

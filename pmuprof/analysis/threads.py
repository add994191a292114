"""Samples joined to threads and the processlist: CPU by thread, by processlist state, by statement, by second.

Each entry of the sample table (model/samples.py: stack row, tid, second) is joined to the row its
thread had in the processlist poll of that second (model/processlist.py). A group's function is the
one that sets it apart from its process: of the functions holding at least a fifth of the group's
samples, the one whose share in the group most exceeds its share of the process's samples (g·ln(g/o), the
group's term of a KL divergence: lift weighted by how much of the group it explains). So "72 % of the
samples of threads in `statistics` were in btr_estimate_n_rows_in_range (33 % overall)" names what
that state does, not mysql_execute_command, which every statement runs. A group that does what the
whole does (nothing is set apart) gets the end of its hot path: the deepest function still holding
half of it."""

from __future__ import annotations

from dataclasses import replace
from functools import cached_property
from pathlib import Path
from collections.abc import Callable

import numpy as np

from ..model import processlist as plist, rundir
from ..model.labels import UNKNOWN, thread_root
from ..model.profile import Profile
from ..model.samples import Samples
from ..model.stacks import Stacks, StacksBuilder
from ..model.threadtables import ThreadRow, ThreadTable, ThreadTables

NOT_POLLED = "(not a connection)"  # a thread no poll of the capture listed: a background thread
IDLE_AT_POLL = "(connection idle at the poll)"  # a connection, between statements (Sleep) when its second was polled
UNGROUPED = (NOT_POLLED, IDLE_AT_POLL)
NO_STATEMENT = "(no statement)"
MAX_GROUPS = 25
SMALL_RANGE = 1 << 23  # codes spanning fewer values than this are grouped without a sort
COLUMN_TABLES = (
    ("state", "CPU by processlist state", "threads in", "state", "(empty state)"),
    ("statement", "CPU by statement (normalised digest)", "threads running", "digest", NO_STATEMENT),
    ("command", "CPU by processlist command", "threads in command", "command", "?"),
)
TABLE_ORDER = ("state", "statement", "user", "command", "thread")
HOT_PATH_SHARE = 0.5  # the hot path goes on while its next frame holds at least this share of the group
APART_SHARE = 0.2  # a group's distinguishing function holds at least this share of the group's samples
APART_MIN = 0.05  # g·ln(g/o) below this sets nothing apart (e.g. 100 % of the group at 95 % overall)


def polled_for(profile: Profile) -> plist.Polled | None:
    """processlist.tsv of the run directory the profile came from (None: none was polled)."""
    if not profile.source:
        return None
    src = Path(profile.source)
    folder = src if src.is_dir() else src.parent
    if not rundir.readable(folder / rundir.PROCESSLIST) or not (src.is_dir() or rundir.is_run_dir(folder)):
        return None  # (a processlist.tsv not to be read was said when the run directory was loaded)
    return plist.read(folder / rundir.PROCESSLIST)


def hot_path_end(stacks: Stacks, rows: np.ndarray, weights: np.ndarray, skip: np.ndarray) -> int:
    """Frame id ending the heaviest path below the root while it keeps HOT_PATH_SHARE of the group
    (its ``rows`` and their ``weights``; frames ``skip`` marks, e.g. [unknown], are walked through but
    never the answer; -1: none). Of a run of frames with the same samples (a caller whose one callee
    takes all of them), the caller."""
    keep = weights > 0
    rows, weights = rows[keep], weights[keep]
    need = weights.sum() * HOT_PATH_SHARE
    lengths, offsets, best, best_w, depth = stacks.lengths, stacks.offsets, -1, np.inf, 1
    while len(rows) and need > 0:
        deeper = lengths[rows] > depth
        rows, weights = rows[deeper], weights[deeper]
        if not len(rows):
            break
        frame = stacks.ids[offsets[rows] + depth]
        sums = np.bincount(frame, weights=weights)  # by frame id: no sort (ties: the lowest id, as before)
        top = int(np.argmax(sums))
        if sums[top] < need:
            break
        on = frame == top
        rows, weights = rows[on], weights[on]
        if not skip[top] and sums[top] < best_w:
            best, best_w = top, sums[top]
        depth += 1
    return best


def weight_among(rows: np.ndarray, weights: np.ndarray, holding: np.ndarray, nrows: int) -> float:
    """``weights`` of the group's ``rows`` that are among ``holding`` (the rows holding a frame; both index
    a Stacks of ``nrows`` rows)."""
    mark = np.zeros(nrows, dtype=bool)
    mark[holding] = True
    return float(weights[mark[rows]].sum())


def heavy_frames(
    stacks: Stacks, rows: np.ndarray, weights: np.ndarray, skip: np.ndarray, share: float = APART_SHARE
) -> dict[int, float]:
    """Frame id -> the group's weight on its heavy nodes: the call-tree nodes below the root holding at
    least ``share`` of the group (its ``rows`` and their ``weights``), a frame counted once per path
    (recursion). Frames ``skip`` marks are walked through, never returned. Nodes of one depth hold
    disjoint rows, so at most 1/share are followed per depth: the walk costs a few hot-path walks."""
    keep = weights > 0
    need = weights[keep].sum() * share
    frontier: list[tuple[np.ndarray, np.ndarray, frozenset[int]]] = [(rows[keep], weights[keep], frozenset())]
    out: dict[int, float] = {}
    lengths, offsets, depth = stacks.lengths, stacks.offsets, 1
    while frontier and need > 0:
        below = []
        for node_rows, node_w, above in frontier:
            deeper = lengths[node_rows] > depth
            node_rows, node_w = node_rows[deeper], node_w[deeper]
            if not len(node_rows):
                continue
            frame = stacks.ids[offsets[node_rows] + depth]
            sums = np.bincount(frame, weights=node_w)
            for top in np.flatnonzero(sums >= need).tolist():
                on = frame == top
                below.append((node_rows[on], node_w[on], above | {top}))
                if not skip[top] and top not in above:
                    out[top] = out.get(top, 0.0) + float(sums[top])
        frontier, depth = below, depth + 1
    return out


class Joined:
    """The sample table with each entry's processlist row (-1: none)."""

    last_cells: list[list[int]] = []  # the cells of the last table made (see cells())

    def __init__(self, profile: Profile, samples: Samples, polled: plist.Polled | None) -> None:
        self.stacks, self.samples, self.polled = profile.stacks, samples, polled
        self.names = (
            dict(profile.server.processlist.thread_names) if profile.server and profile.server.processlist else {}
        )
        self.at = (
            polled.lookup(samples.tids, samples.seconds) if polled is not None else np.full(len(samples), -1)
        ).astype(np.int32)
        self.conns = polled.connections() if polled is not None else {}
        self.total = max(samples.total, 1)
        frames = self.stacks.frames
        self.skip = np.fromiter((f.startswith((UNKNOWN, "[elided")) for f in frames), dtype=bool, count=len(frames))
        self.skip[np.unique(self.stacks.root_ids)] = True
        self._inclusive: dict[int, float] = {}

    def column(self, name: str, empty: str) -> tuple[np.ndarray, list[str]]:
        """Each entry's code of processlist column ``name``, and the label of each code (the last two
        ``IDLE_AT_POLL`` and ``NOT_POLLED``, for entries not joined: a thread some poll listed as a
        connection, and one none did; ``empty`` stands for an empty value)."""
        labels = ([v or empty for v in self.polled.values[name]] if self.polled else []) + list(UNGROUPED[::-1])
        idle, never = len(labels) - 2, len(labels) - 1
        if self.polled is None or not len(self.polled):
            return np.full(len(self.samples), never, dtype=np.int32), labels
        codes = self.polled.codes[name][np.maximum(self.at, 0)].astype(np.int32)
        unjoined = self.at < 0
        known = np.isin(self.samples.tids, np.fromiter(self.conns, dtype=np.int64, count=len(self.conns)))
        codes[unjoined] = np.where(known[unjoined], idle, never)
        return codes, labels

    def characteristic(self, pick: np.ndarray) -> tuple[str, float, float]:
        """(function, its share in the entries ``pick`` (indices), its share of its process's samples): the
        function that sets the group apart (module docstring), else the end of its hot path; ("", 0, 0)
        when neither exists."""
        mine = self.samples.rows[pick]
        seen = np.zeros(len(self.stacks), dtype=bool)
        seen[mine] = True
        rows = np.flatnonzero(seen)  # the group's rows, sorted, and their samples: a mark, no sort
        w = np.bincount(mine, weights=self.samples.counts[pick], minlength=len(seen))[rows]
        total = float(w.sum())
        whole = float(max(self.root_totals[np.unique(self.stacks.root_ids[rows])].sum(), 1))
        best, best_key = -1, (APART_MIN, 0.0)
        for f, weight in sorted(heavy_frames(self.stacks, rows, w, self.skip).items()):
            share, overall = weight / total, self.inclusive(f) / whole
            key = (share * np.log(share / overall) if overall > 0 else 0.0, share)
            if key > best_key:
                best, best_key = f, key
        if best < 0:
            best = hot_path_end(self.stacks, rows, w, self.skip)
            if best < 0:
                return "", 0.0, 0.0
        holding = self.stacks.rows_with(self.stacks.lut([self.stacks.frames[best]]))
        return (
            self.stacks.frames[best],
            weight_among(rows, w, holding, len(self.stacks)) / total,
            self.inclusive(best) / whole,
        )

    def inclusive(self, frame: int) -> float:
        """Samples with ``frame`` anywhere below the root (the whole profile), once per stack; remembered:
        groups share their heavy frames."""
        if frame not in self._inclusive:
            rows = self.stacks.rows_with(self.stacks.lut([self.stacks.frames[frame]]))
            self._inclusive[frame] = float(self.stacks.counts[rows].sum())
        return self._inclusive[frame]

    @cached_property
    def root_totals(self) -> np.ndarray:
        """Samples per frame id as a process root."""
        return np.bincount(self.stacks.root_ids, weights=self.stacks.counts, minlength=len(self.stacks.frames))

    def table(self, codes: np.ndarray, label: Callable[[int], str], limit: int = MAX_GROUPS) -> list[ThreadRow]:
        """Samples per group (an integer code per entry, ``label`` names a code), busiest first (ties by
        label), each with its function."""
        uniq, inverse = _group_of(codes)
        sums = np.bincount(inverse, weights=self.samples.counts, minlength=len(uniq))
        names = [label(int(c)) for c in uniq.tolist()]
        shown = sorted(range(len(uniq)), key=lambda g: (-sums[g], names[g]))[:limit]
        position = np.full(len(uniq), -1, dtype=np.int32)
        position[shown] = np.arange(len(shown), dtype=np.int32)
        group = position[inverse]  # each entry's table row; -1 past the limit
        del inverse
        out = []
        for rank, g in enumerate(shown):  # a pass per row shown (at most ``limit``): no index of all entries
            fn, share, overall = self.characteristic(np.flatnonzero(group == rank))
            out.append(
                ThreadRow(
                    key=names[g],
                    samples=int(sums[g]),
                    share=float(sums[g]) / self.total,
                    function=fn,
                    function_share=share,
                    function_overall=overall,
                    sentence="",  # the table's caller words it
                )
            )
        self.last_cells = self.cells(group)
        return out

    def cells(self, group: np.ndarray) -> list[list[int]]:
        """[table row, second, samples] per (row, second) with samples (rows past the table's limit left out)."""
        secs = self.samples.seconds
        keep = (group >= 0) & (secs >= 0)
        if not keep.any():
            return []
        base = int(np.min(secs, where=keep, initial=np.iinfo(secs.dtype).max))
        width = int(np.max(secs, where=keep, initial=base)) - base + 1
        rows, offs, sums = self.samples.cells(lambda lo, hi: group[lo:hi], base, width)  # type: ignore[misc]
        return [[r, s + base, n] for r, s, n in zip(rows.tolist(), offs.tolist(), sums.tolist())]


def _group_of(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct codes sorted, each entry's index among them as int32): np.unique's answer, from a mark
    per value when the codes span a small range (thread ids, processlist codes), with no sort."""
    if not len(codes):
        return np.zeros(0, np.int64), np.zeros(0, np.int32)
    lo, hi = int(codes.min()), int(codes.max())
    if hi - lo >= SMALL_RANGE:
        uniq, inverse = np.unique(codes, return_inverse=True)
        return uniq, inverse.reshape(-1).astype(np.int32)
    shifted = (codes - lo).astype(np.int32)
    seen = np.zeros(hi - lo + 1, dtype=bool)
    seen[shifted] = True
    index = np.cumsum(seen, dtype=np.int32)
    index -= 1
    return np.flatnonzero(seen) + lo, index[shifted]


def thread_label(joined: Joined, tid: int) -> str:
    """``tid``, with its performance_schema name or its connection id and user when known."""
    if str(tid) in joined.names:
        return f"{tid} {joined.names[str(tid)]}"
    if tid in joined.conns:
        cid, user = joined.conns[tid]
        return f"{tid} (connection {cid}{', ' + user if user else ''})"
    return str(tid)


def tables(profile: Profile, polled: plist.Polled | None = None) -> ThreadTables | None:
    """CPU by thread, by processlist state, statement and user@db (None: the input kept no thread ids)."""
    samples = profile.samples
    if samples is None or not len(samples) or not samples.has_tids or not samples.matches(profile.stacks):
        return None
    polled = polled if polled is not None else polled_for(profile)
    j = Joined(profile, samples, polled)
    out = ThreadTables(samples=samples.total, polled=polled is not None, tables=[])

    def add(name: str, title: str, group: str, codes: np.ndarray, label: Callable[[int], str]) -> None:
        rows = j.table(codes, label)
        for row in rows:
            row["sentence"] = sentence(group, row)
        out["tables"].append(ThreadTable(name=name, title=title, rows=rows, cells=j.last_cells))

    if polled is not None:
        secs = samples.seconds[samples.seconds >= 0]
        out.update(
            {
                "joined": int(samples.counts[j.at >= 0].sum()),
                "polls": int(len(np.unique(polled.seconds))),
                "seconds": int(secs.max() - secs.min() + 1) if len(secs) else 0,
            }
        )
        for name, title, group, column, empty in COLUMN_TABLES:
            codes, labels = j.column(column, empty)
            add(name, title, group, codes, labels.__getitem__)
        (users, u_labels), (dbs, d_labels) = j.column("user", "?"), j.column("db", "-")
        add(
            "user",
            "CPU by user@db",
            "threads of",
            users * len(d_labels) + dbs,
            lambda c: (
                u_labels[c // len(d_labels)]
                if u_labels[c // len(d_labels)] in UNGROUPED
                else f"{u_labels[c // len(d_labels)]}@{d_labels[c % len(d_labels)]}"
            ),
        )
    add(
        "thread",
        "CPU by thread",
        "thread",
        samples.tids.astype(np.int64),
        lambda t: thread_label(j, t) if t >= 0 else "unknown",
    )
    out["tables"].sort(key=lambda t: TABLE_ORDER.index(t["name"]))
    return out


def sentence(group: str, row: ThreadRow) -> str:
    """ "72 % of the samples of threads in `statistics` were in f (33 % overall)"."""
    if not row["function"] or row["key"] in UNGROUPED:
        return ""
    return (
        f"{100 * row['function_share']:.0f} % of the samples of {group} `{row['key'][:80]}` were in "
        f"{row['function']} ({100 * row['function_overall']:.0f} % overall)"
    )


def attach(profile: Profile) -> Profile:
    """The profile with its thread tables (``Profile.threads``): the join the report shows, done here,
    in the analyse stage, once."""
    return profile if profile.threads is not None else replace(profile, threads=tables(profile))


def split_by_thread(profile: Profile) -> Stacks | None:
    """The stacks with a thread frame (``name-tid``, the name from performance_schema when known) under
    each process root, from the sample table: what --per-thread folding gives, without the perf.data."""
    s = profile.samples
    if s is None or not s.has_tids or not s.matches(profile.stacks):
        return None
    names = dict(profile.server.processlist.thread_names) if profile.server and profile.server.processlist else {}
    key = s.rows.astype(np.int64) << 32 | (s.tids.astype(np.int64) & 0xFFFFFFFF)
    uniq, inverse = np.unique(key, return_inverse=True)
    sums = np.bincount(inverse.reshape(-1), weights=s.counts).astype(np.int64)
    builder = StacksBuilder()
    for k, n in zip(uniq.tolist(), sums.tolist()):
        row, tid = k >> 32, k & 0xFFFFFFFF
        stack = profile.stacks.row(row)
        label = (
            thread_root(names.get(str(tid), "thread").rsplit("/", 1)[-1], tid)
            if tid != 0xFFFFFFFF
            else "thread-unknown"
        )
        builder.add(stack[:1] + (label,) + stack[1:], n)
    return builder.build()

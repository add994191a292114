"""Fold ``perf script`` text (default or pmuprof's minimal fields, with call chains) into stacks."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from collections.abc import Iterable, Mapping

from .counters import event_name
from .labels import INLINED_DSO, UNKNOWN, frame_label, process_root, raw_label, thread_root
from .samples import MAX_TID, UNKNOWN as NO_VALUE, Samples, from_keyed
from .stacks import Stack, Stacks

MYSQL_COMMS = ("mysqld", "mariadbd")
# Default targets of a system-wide input given no --pid/--comm: the servers, and pmuprof's demo workload.
DEFAULT_TARGET_COMMS = MYSQL_COMMS + ("pmuprof-demo",)

# "comm  pid/tid ..." or "comm  tid ...": comm may hold spaces and digits ("worker 2"), so try, in
# order: default format (tid or pid/tid, then [cpu] and time:), pid/tid, then the first number field.
# perf separates fields with ASCII blanks and prints ASCII digits: match ASCII only (re.ASCII), so a
# thread name with U+3000 or Arabic-Indic digits is not split or read as a pid.
_WS = " \t\n\r\x0b\x0c"
_HEAD = r"^(?P<comm>\S.*?)\s+(?P<a>\d+)"
_HEADERS = (
    re.compile(_HEAD + r"(?:/(?P<b>\d+))?\s+(?:\[\d+\]\s+)?(?P<sec>\d+)\.\d+:", re.ASCII),
    re.compile(_HEAD + r"/(?P<b>\d+)(?:\s|$)", re.ASCII),
    re.compile(_HEAD + r"(?:\s|$)", re.ASCII),
)
_EVENT = re.compile(r"\s(?P<event>[A-Za-z][\w.\-/=,]*(?::[a-zA-Z]*)?):\s*$", re.ASCII)
# Marks a raw-address frame inside the Folder: no symbol split_frame returns starts with a newline
# (a real symbol starting with "@" must stay a symbol, and must not crash the leaf's int(…, 16)).
_RAW = "\n"
_OFFSET = re.compile(r"\+0x(?P<off>[0-9a-fA-F]+)$", re.ASCII)
_MAX_SECOND_DIGITS = 18  # a longer time field is not a time (native/lib/parse.c says the same)


def second_of(digits: str | None) -> int:
    """The whole seconds of perf script's time field, -1 when there is none (or it is absurdly long)."""
    if digits is None:
        return NO_VALUE
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) <= _MAX_SECOND_DIGITS else NO_VALUE


def tid_of(tid: int) -> int:
    """A thread id as the sample table keeps it (int32), -1 when it does not fit."""
    return tid if 0 <= tid <= MAX_TID else NO_VALUE


@dataclass
class FoldResult:
    """What folding kept, what it dropped, and why."""

    stacks: Mapping[Stack, int] = field(default_factory=Counter)  # a Counter as folded here, a Stacks from native
    leaves: Counter[tuple[str, str, int]] = field(default_factory=Counter)  # (dso, symbol, offset) -> samples
    names: dict[int, str] = field(default_factory=dict)  # pid -> process name
    left_out: dict[int, tuple[str, int]] = field(default_factory=dict)  # pid -> (name, samples) the choice left out
    events: Counter[str] = field(default_factory=Counter)
    kept: int = 0
    filtered: int = 0
    bad_lines: int = 0
    truncated: bool = False
    pid_known: bool = True
    # per (stack row, tid, second) of Stacks.of(stacks); None where the folder kept no thread ids
    samples: Samples | None = field(default=None, compare=False)
    notes: tuple[str, ...] = ()  # the folder's own warnings (pmuprof-perfdata: a perf map it would not read)
    # samples that took the callers their frame-pointer walk skipped under a library leaf (model/callers.py)
    recovered_callers: int = 0
    # pid -> the executable it mapped under its own name (pmuprof-perfdata reads it from perf.data's maps; perf
    # script's text does not say): tells two servers of one name apart in a system-wide recording
    exes: dict[int, str] = field(default_factory=dict)

    def warnings(self) -> list[str]:
        out = list(self.notes)
        if self.truncated:
            out.append("perf script text ends inside a sample: the last, incomplete sample was dropped")
        if self.bad_lines:
            out.append(f"{self.bad_lines} line(s) of perf script text were not understood and were skipped")
        if not self.pid_known:
            out.append("perf script text has no pid field: threads are grouped by command name")
        return out


def split_frame(line: str) -> tuple[str, str, int | None] | None:
    """'  addr sym+0xoff (dso)' -> (symbol, dso, offset); None when the line is not a frame."""
    body = line.strip(_WS)
    addr, _, tail = body.partition(" ")
    if not addr or not tail or not all(c in "0123456789abcdefABCDEF" for c in addr):
        return None
    tail = tail.strip(_WS)
    if not tail.endswith(")") or " (" not in tail and not tail.startswith("("):
        return None
    cut = _dso_open_paren(tail)
    sym, dso = (tail[:cut].rstrip(_WS), tail[cut + 1 : -1]) if cut > 0 else (UNKNOWN, tail[1:-1])
    offset = None
    m = _OFFSET.search(sym)
    if m:
        offset = int(m.group("off"), 16)
        sym = sym[: m.start()]
    return sym.strip(_WS) or UNKNOWN, dso, offset


def inline_frame(rest: str) -> tuple[str, str, int | None] | None:
    """The 'ip sym+off (dso)' at the end of a header line (samples recorded without call chains)."""
    rest = rest.rstrip(_WS)
    if not rest.endswith(")"):
        return None
    paren = _dso_open_paren(rest)
    if paren <= 0:
        return None
    cut = rest.rfind(": ", 0, paren)
    return split_frame(rest[cut + 2 :] if cut >= 0 else rest)


def _dso_open_paren(tail: str) -> int:
    """Index of the '(' opening the trailing '(dso)' group; dso may nest '(deleted)'."""
    depth = 0
    for i in range(len(tail) - 1, -1, -1):
        ch = tail[i]
        if ch == ")":
            depth += 1
        elif ch == "(":
            depth -= 1
            if depth == 0:
                return i
    return -1


class Folder:
    """Streaming folder: feed lines, then ``finish()``. Memory grows with unique stacks only.

    ``pids`` keeps those processes. ``comms`` keeps every process in which *any* thread has one of
    those names (MySQL 8 renames its threads), decided at ``finish``. ``names`` overrides the
    process label of a pid (capture knows /proc/PID/comm; offline input uses the main thread's comm).
    """

    def __init__(
        self,
        pids: Iterable[int] = (),
        comms: Iterable[str] = (),
        per_thread: bool = False,
        names: dict[int, str] | None = None,
        raw_unknown: bool = False,
    ) -> None:
        self.raw_unknown = raw_unknown  # unnamed user frames as '[dso@pid:0xip]' for later grouping
        self.pids = set(pids)
        self.comms = set(comms)
        self.per_thread = per_thread
        self.names = dict(names or {})
        self.result = FoldResult()
        self._raw: Counter[tuple[int, str, int, Stack, int]] = Counter()  # (pid, comm, tid, frames, second) -> count
        self._header: tuple[int, str, int, int] | None = None
        self._frames: list[tuple[str, str, int | None]] = []
        self._keep = False
        self._seen_comm: dict[int, Counter[str]] = {}
        self._leaves: Counter[tuple[int, str, str, str, int]] = Counter()  # (pid, comm, dso, symbol, offset) -> samples

    def feed(self, line: str) -> None:
        if not line.strip(_WS):
            self._end_sample()
            return
        if line[0] in " \t":
            frame = split_frame(line)
            if frame is None and any(
                h.match(line.strip(_WS)) for h in _HEADERS
            ):  # perf script without -g: one line a sample
                self._end_sample()
                self._start_sample(line.strip(_WS))
                return
            if self._header is None:
                self.result.bad_lines += 1
                return
            if frame is None:
                self.result.bad_lines += 1
            elif self._keep:
                if self.raw_unknown and frame[0] == UNKNOWN and frame[1].startswith("/"):
                    frame = (_RAW + line.split(None, 1)[0], frame[1], None)
                self._frames.append(frame)
            return
        self._end_sample()
        self._start_sample(line.rstrip("\n"))

    def _start_sample(self, line: str) -> None:
        m = next((m for m in (h.match(line) for h in _HEADERS) if m), None)
        if not m:
            self.result.bad_lines += 1
            return
        comm = m.group("comm").strip(_WS)
        if m.groupdict().get("b") is not None:
            pid, tid = int(m.group("a")), int(m.group("b"))
        else:
            self.result.pid_known = False
            pid, tid = -1, int(m.group("a"))
        inline = inline_frame(line[m.end() :])
        ev = _EVENT.search(line if inline is None else line[: line.rfind(": ") + 1])
        if ev:
            self.result.events[event_name(ev.group("event"))] += 1
        self._header = (pid, comm, tid, second_of(m.groupdict().get("sec")))
        self._frames = []
        self._keep = self._wanted(pid, comm)
        if inline is not None and self._keep:
            self._frames.append(inline)

    def _wanted(self, pid: int, comm: str) -> bool:
        if pid < 0:  # default perf script format: no pid field; filters are settled in finish()
            return True
        if self.pids:
            return pid in self.pids
        return True

    def _end_sample(self) -> None:
        if self._header is None:
            return
        pid, comm, tid, sec = self._header
        self._header = None
        if not self._keep:
            self.result.filtered += 1
            return
        if not self._frames:
            self._frames = [(UNKNOWN, UNKNOWN, None)]
        self._seen_comm.setdefault(pid, Counter())[comm] += 1
        if tid == pid:
            self.result.names[pid] = comm
        # inlined calls come before the frame they are in: that frame is the leaf (skid, annotate)
        leaf_sym, leaf_dso, leaf_off = next((f for f in self._frames if f[1] != INLINED_DSO), self._frames[0])
        if leaf_off is not None and leaf_sym != UNKNOWN:
            self._leaves[(pid, comm, leaf_dso, leaf_sym, leaf_off)] += 1
        elif leaf_sym.startswith(_RAW):  # unnamed code: keep the vaddr (symbol "") for skid correction
            self._leaves[(pid, comm, leaf_dso, "", int(leaf_sym[1:], 16))] += 1
        frames = tuple(
            raw_label(d, int(s[1:], 16)) if s[0] == _RAW else frame_label(s, d) for s, d, _ in reversed(self._frames)
        )
        self._raw[(pid, comm, tid, frames, sec)] += 1
        self.result.kept += 1

    def _kept_processes(self) -> set[tuple[int, str | None]]:
        """(pid, None) keeps a whole process; (-1, comm) keeps a thread name of pid-less input."""
        keep: set[tuple[int, str | None]] = set()
        for pid, comms in self._seen_comm.items():
            if pid >= 0 and (not self.comms or self.pids or self.comms & set(comms)):
                keep.add((pid, None))
        if -1 in self._seen_comm:
            wanted = set(self.comms)
            if self.pids:  # without a pid field, a --pid names the main thread: keep its thread names
                wanted |= {c for (p, c, t, _, _) in self._raw if p < 0 and t in self.pids}
            for comm in self._seen_comm[-1]:
                if not wanted and not self.pids or comm in wanted:
                    keep.add((-1, comm))
        return keep

    def finish(self, truncated: bool = False) -> FoldResult:
        if self._header is not None:
            if truncated:
                self._header = None
                self.result.truncated = True
            else:
                self._end_sample()
        res = self.result
        for pid, comms in self._seen_comm.items():
            res.names.setdefault(pid, comms.most_common(1)[0][0])
        res.names.update({p: n for p, n in self.names.items() if p in res.names})
        keep = self._kept_processes()
        dropped = {k: c for k, c in self._raw.items() if (k[0], k[1]) not in keep and (k[0], None) not in keep}
        for key, count in dropped.items():
            del self._raw[key]
            res.kept -= count
            res.filtered += count
            if key[0] >= 0:
                name, n = res.left_out.get(key[0], (res.names[key[0]], 0))
                res.left_out[key[0]] = (name, n + count)
        res.names = {p: n for p, n in res.names.items() if (p, None) in keep}
        for (pid, comm, dso, sym, off), count in self._leaves.items():
            if (pid, None) in keep or (pid, comm) in keep:
                res.leaves[(dso, sym, off)] += count
        by_pid = {p for (p, _, _, _, _) in self._raw}
        label_pid = len({res.names.get(p) for p in by_pid}) < len(by_pid)
        keyed: Counter[tuple[Stack, int, int]] = Counter()  # (stack, tid, second) -> samples
        folded: Counter[Stack] = Counter()
        for (pid, comm, tid, frames, sec), count in self._raw.items():
            name = comm if pid < 0 else res.names[pid]
            head: Stack = (process_root(name, pid if label_pid and pid >= 0 else None),)
            if self.per_thread:
                head += (thread_root(comm, tid),)
            folded[head + frames] += count
            keyed[(head + frames, tid_of(tid), sec)] += count
        res.stacks = folded
        res.samples = from_keyed(Stacks.of(folded), keyed)
        return res


def fold_lines(
    lines: Iterable[str],
    pids: Iterable[int] = (),
    comms: Iterable[str] = (),
    per_thread: bool = False,
    truncated: bool = False,
    names: dict[int, str] | None = None,
    raw_unknown: bool = False,
) -> FoldResult:
    folder = Folder(pids, comms, per_thread, names, raw_unknown)
    for line in lines:
        folder.feed(line)
    return folder.finish(truncated=truncated)

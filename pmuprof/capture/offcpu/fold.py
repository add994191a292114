"""Turn the tracer's summed waits into folded off-CPU stacks (microseconds, state as the leaf frame)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from collections.abc import Mapping

from ...model.labels import KERNEL_SUFFIX, UNKNOWN, clean, process_root, short_blocks_label, state_label, thread_root
from ...model.profile import Stack
from ...tools.native.offcpu import Open, TracerOutput, Wait
from ..proc.threads import ThreadNow
from .symbols import KernelSymbols, UserSymbols, lookup_addresses

Threads = Mapping[int, Mapping[int, ThreadNow]]  # tgid -> tid -> thread
BLOCKED = frozenset("SD")  # /proc states of a thread that waits (I is a kernel thread's idle D)


@dataclass(frozen=True)
class Folded:
    stacks: Mapping[Stack, int] = field(default_factory=dict)  # microseconds
    total_us: int = 0
    before_us: int = 0  # in waits that began before the tracer attached
    threads: int = 0
    short_us: int = 0  # in blocks under the tracer's threshold (no stacks)


def proc_state(letter: str) -> str:
    """A /proc state letter as an off-CPU state: D and I are D, S is S, T/t are T, R is R."""
    return {"D": "D", "I": "D", "S": "S", "T": "T", "t": "T", "R": "R"}.get(letter, "?")


class _Builder:
    def __init__(self, roots: Mapping[int, str], kernel: KernelSymbols, user: UserSymbols, per_thread: bool) -> None:
        self.roots, self.kernel, self.user, self.per_thread = roots, kernel, user, per_thread
        self.ns: Counter = Counter()
        self.before_ns = 0
        self.short_ns = 0
        self.tids: set[tuple[int, int]] = set()

    def head(self, tgid: int, tid: int, comm: str) -> tuple[str, ...]:
        root = self.roots.get(tgid) or process_root(comm or str(tgid))
        return (root, thread_root(comm or "?", tid)) if self.per_thread else (root,)

    def add(
        self,
        head: tuple[str, ...],
        user: tuple[str, ...],
        kernel: tuple[str, ...],
        state: str,
        ns: int,
        tid: tuple[int, int],
        before: bool = False,
    ) -> None:
        if ns <= 0:
            return
        self.ns[head + user + kernel + (state_label(state),)] += ns
        self.tids.add(tid)
        if before:
            self.before_ns += ns


def fold(
    out: TracerOutput,
    roots: Mapping[int, str],
    kernel: KernelSymbols,
    user: UserSymbols,
    start: Threads,
    end: Threads,
    per_thread_roots: bool = False,
) -> Folded:
    """Every off-CPU nanosecond the tracer saw, plus the waits /proc showed that spanned its whole window."""
    blocked: tuple[Wait | Open, ...] = (*out.waits, *out.open)
    user.resolve(
        [(w.tgid, a) for w in blocked for a in lookup_addresses(out.ustack(w.ustack))]
        + [(tgid, a) for (tgid, _), h in out.idle.items() for a in lookup_addresses(out.ustack(h))]
    )
    b = _Builder(roots, kernel, user, per_thread_roots)
    comms = {(w.tgid, w.tid): w.comm for w in out.waits}
    for w in out.waits:
        head = b.head(w.tgid, w.tid, w.comm)
        if w.short:  # under the threshold: no stacks, the time kept whole
            b.add(head, (short_blocks_label(out.min_block_us),), (), w.state, w.ns, (w.tgid, w.tid))
            b.short_ns += w.ns
            continue
        if w.state == "B":  # off the CPU when the tracer attached: /proc's start view of it (its state; its
            before = start.get(w.tgid, {}).get(w.tid)  # stacks too, unless lazy mode took them when it came back)
            kframes = kernel.frames(out.stack(w.kstack)) if w.kstack >= 0 else _proc_kernel(before)
            b.add(
                head,
                user.frames(w.tgid, out.ustack(w.ustack)) or (UNKNOWN,),
                kframes,
                proc_state(before.state) if before else "?",
                w.ns,
                (w.tgid, w.tid),
                before=True,
            )
            continue
        b.add(
            head,
            user.frames(w.tgid, out.ustack(w.ustack)),
            kernel.frames(out.stack(w.kstack)),
            w.state,
            w.ns,
            (w.tgid, w.tid),
        )
    for o in out.open:  # still off the CPU at the end: count up to the end
        comm = comms.get((o.tgid, o.tid)) or _comm(end, start, o.tgid, o.tid)
        # lazy mode took no kernel stack for it: /proc's at the end (the thread has not run since)
        kframes = kernel.frames(out.stack(o.kstack)) if o.kstack >= 0 else _proc_kernel(end.get(o.tgid, {}).get(o.tid))
        b.add(
            b.head(o.tgid, o.tid, comm),
            user.frames(o.tgid, out.ustack(o.ustack)),
            kframes,
            o.state,
            out.end_ns - max(o.since_ns, out.t0_ns),
            (o.tgid, o.tid),
        )
    _whole_window(b, out, start, end)
    stacks = {s: ns // 1000 for s, ns in b.ns.items() if ns >= 1000}
    return Folded(stacks, sum(stacks.values()), b.before_ns // 1000, len(b.tids), b.short_ns // 1000)


def _whole_window(b: _Builder, out: TracerOutput, start: Threads, end: Threads) -> None:
    """Threads waiting at the start that never ran during the window: blocked all of it."""
    seen = {(w.tgid, w.tid) for w in out.waits} | {(o.tgid, o.tid) for o in out.open}
    for tgid, threads in start.items():
        for tid, t in threads.items():
            later = end.get(tgid, {}).get(tid)
            if (tgid, tid) in seen or t.state not in BLOCKED or later is None or later.state not in BLOCKED:
                continue
            walked = b.user.frames(tgid, out.ustack(out.idle.get((tgid, tid), 0)))  # by the loader at the end
            b.add(
                b.head(tgid, tid, t.comm),
                walked or (UNKNOWN,),
                _proc_kernel(t),
                proc_state(t.state),
                out.end_ns - out.t0_ns,
                (tgid, tid),
                before=True,
            )


def _proc_kernel(t: ThreadNow | None) -> tuple[str, ...]:
    return tuple(clean(n) + KERNEL_SUFFIX for n in t.kernel) if t else ()


def _comm(end: Threads, start: Threads, tgid: int, tid: int) -> str:
    t = end.get(tgid, {}).get(tid) or start.get(tgid, {}).get(tid)
    return t.comm if t else ""

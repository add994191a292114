"""Turn the tracer's summed waits into folded off-CPU stacks (microseconds, state as the leaf frame).

A block the tracer saw woken splits in two lines of the same stack: its blocked part under the state it
left the CPU in, and its part after the wake-up (runnable, waiting for a CPU) under ``off-cpu:W``.
"""

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
RUNNABLE, WOKEN = "R", "W"  # preempted (runnable all along); woken, waiting for a CPU since


@dataclass(frozen=True)
class Folded:
    stacks: Mapping[Stack, int] = field(default_factory=dict)  # microseconds
    total_us: int = 0
    before_us: int = 0  # in waits that began before the tracer attached
    threads: int = 0
    short_us: int = 0  # in blocks under the tracer's threshold (no stacks)
    runnable_us: int = 0  # after a wake-up, waiting for a CPU (the ``off-cpu:W`` leaves)


def proc_state(letter: str) -> str:
    """A /proc state letter as an off-CPU state: D and I are D, S is S, T/t are T, R is R."""
    return {"D": "D", "I": "D", "S": "S", "T": "T", "t": "T", "R": "R"}.get(letter, "?")


class _Builder:
    def __init__(self, roots: Mapping[int, str], kernel: KernelSymbols, user: UserSymbols, per_thread: bool) -> None:
        self.roots, self.kernel, self.user, self.per_thread = roots, kernel, user, per_thread
        self.ns: Counter = Counter()
        self.before_ns = 0
        self.short_ns = 0
        self.runq_ns = 0
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
        runq: int = 0,
    ) -> None:
        """``ns`` off the CPU in this stack, ``runq`` of it after the wake-up (kept apart, as state W)."""
        runq = max(0, min(runq, ns)) if state != RUNNABLE else 0
        if ns <= 0:
            return
        if ns - runq > 0:
            self.ns[head + user + kernel + (state_label(state),)] += ns - runq
        if runq:
            self.ns[head + user + kernel + (state_label(WOKEN),)] += runq
            self.runq_ns += runq
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
            b.add(head, (short_blocks_label(out.min_block_us),), (), w.state, w.ns, (w.tgid, w.tid), runq=w.runq_ns)
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
                runq=w.runq_ns,
            )
            continue
        b.add(
            head,
            user.frames(w.tgid, out.ustack(w.ustack)),
            kernel.frames(out.stack(w.kstack)),
            w.state,
            w.ns,
            (w.tgid, w.tid),
            runq=w.runq_ns,
        )
    for o in out.open:  # still off the CPU at the end: count up to the end
        _open(b, out, o, comms.get((o.tgid, o.tid)) or _comm(end, start, o.tgid, o.tid), start, end)
    _whole_window(b, out, start, end)
    stacks = {s: ns // 1000 for s, ns in b.ns.items() if ns >= 1000}
    runnable = sum(n for s, n in stacks.items() if s[-1] == state_label(WOKEN))
    return Folded(stacks, sum(stacks.values()), b.before_ns // 1000, len(b.tids), b.short_ns // 1000, runnable)


def _open(b: _Builder, out: TracerOutput, o: Open, comm: str, start: Threads, end: Threads) -> None:
    """A thread still off the CPU at the end, up to the end (after its wake-up, if woken: runnable)."""
    now = end.get(o.tgid, {}).get(o.tid)
    # lazy mode took no kernel stack for it: /proc's at the end (the thread has not run since)
    kframes = b.kernel.frames(out.stack(o.kstack)) if o.kstack >= 0 else _proc_kernel(now)
    before = o.state == "B"  # off the CPU since before the window, seen first at its wake-up
    was = start.get(o.tgid, {}).get(o.tid)
    b.add(
        b.head(o.tgid, o.tid, comm),
        b.user.frames(o.tgid, out.ustack(o.ustack)) or ((UNKNOWN,) if before else ()),
        kframes if kframes or not before else _proc_kernel(was),
        (proc_state(was.state) if was else "?") if before else o.state,
        out.end_ns - max(o.since_ns, out.t0_ns),
        (o.tgid, o.tid),
        before=before,
        runq=out.end_ns - max(o.wake_ns, out.t0_ns) if o.wake_ns else 0,
    )


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

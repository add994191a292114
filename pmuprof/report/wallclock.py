"""The wall-clock view: on-CPU samples scaled to time and off-CPU time in one flame graph coloured by thread
state, and what the threads were doing (threads.json, grouped by identical stack) in place of a pt-pmp dump."""

from __future__ import annotations

import hashlib
import re

import numpy as np

from ..model.labels import RUNNABLE_STATES, is_kernel, parse_state
from ..model.offcpu import OffCpuProfile, Snapshot
from ..model.profile import Profile, Stack
from .flamesvg import trie_svg
from .flametrie import Trie
from .rows import SnapshotRow, StateRow, ThreadGroupRow

RUNNING, RUNNABLE, FUTEX, IO, OTHER = "running", "runnable", "blocked: futex", "blocked: I/O", "blocked: other"
STATES = (RUNNING, RUNNABLE, FUTEX, IO, OTHER)
ABOUT = {
    RUNNING: "on a CPU (samples × 1 / sampling frequency)",
    RUNNABLE: "ready, waiting for a CPU (preempted, or woken and not yet run)",
    FUTEX: "asleep on a futex: mutexes, condition variables, InnoDB events and locks",
    IO: "uninterruptible, or in disk I/O: reads, writes, fsync",
    OTHER: "asleep elsewhere: network, poll, timers",
}
HUE = {RUNNING: 120, RUNNABLE: 48, FUTEX: 210, IO: 0, OTHER: 270}  # green, amber, blue, red, violet
_IO = re.compile(
    r"io_schedule|blkdev|submit_bio|_sync_file|fsync|fdatasync|pread|pwrite|io_cqring_wait|"
    r"read_events|aio|wait_on_page|folio_wait|jbd2|filemap_fault"
)
MAX_GROUPS = 30  # thread groups listed per snapshot


NO_USER_STACK = "(no user stack recorded)"
NOT_WOKEN = (
    "wake-ups were not traced in this capture: a woken thread's wait for a CPU is counted in the state it slept "
    "in, and runnable is preempted time only"
)


def state_frame(state: str) -> str:
    return f"[{state}]"


def blocked_state(stack: Stack) -> str:
    """The state group of an off-CPU stack (leaf frame off-cpu:X): runnable, futex, I/O or other."""
    letter = parse_state(stack[-1]) or "?"
    if letter in RUNNABLE_STATES:  # preempted, or woken and waiting for a CPU
        return RUNNABLE
    kernel = [f for f in stack if is_kernel(f)]
    if any("futex" in f for f in kernel) or any(f.startswith(("__lll_lock_wait", "__futex")) for f in stack):
        return FUTEX
    if letter == "D" or any(_IO.search(f) for f in kernel):
        return IO
    return OTHER


def wall_stacks(profile: Profile) -> tuple[dict[Stack, int], str]:
    """Stacks in microseconds, each with its state group right under the process root; '' or why there are none."""
    off = profile.offcpu
    if off is None:
        return {}, "no off-CPU time recorded (capture with --off-cpu)"
    freq = profile.run.record.frequency
    out: dict[Stack, int] = {}
    for stack, n in off.stacks.items():
        key = (stack[0], state_frame(blocked_state(stack)), *stack[1:-1])
        out[key] = out.get(key, 0) + n
    woken = "" if off.headers.get("wakeups") == "on" else NOT_WOKEN
    if not freq:
        return out, "; ".join(
            filter(None, ["the sampling frequency is unknown: on-CPU time is left out of this view", woken])
        )
    us = 1e6 / freq
    for stack, n in profile.stacks.items():
        key = (stack[0], state_frame(RUNNING), *stack[1:])
        out[key] = out.get(key, 0) + int(round(n * us))
    return out, woken


def state_totals(stacks: dict[Stack, int]) -> list[StateRow]:
    """Per process and state group: microseconds and share of the process's wall-clock thread time."""
    sums: dict[tuple[str, str], int] = {}
    for stack, n in stacks.items():
        sums[(stack[0], stack[1])] = sums.get((stack[0], stack[1]), 0) + n
    per_process: dict[str, int] = {}
    for (process, _), n in sums.items():
        per_process[process] = per_process.get(process, 0) + n
    order = {state_frame(s): i for i, s in enumerate(STATES)}
    return [
        StateRow(
            process=p,
            state=s.strip("[]"),
            about=ABOUT.get(s.strip("[]"), ""),
            us=n,
            seconds=round(n / 1e6, 3),
            share=n / per_process[p] if per_process[p] else 0.0,
        )
        for (p, s), n in sorted(sums.items(), key=lambda kv: (kv[0][0], order.get(kv[0][1], 9)))
    ]


def _colors(trie: Trie) -> list[str]:
    """Each node in its state group's hue (the group is the node's ancestor right under the root)."""
    hue = np.full(trie.size, -1, dtype=np.int64)
    for node in np.flatnonzero(trie.depths == 1).tolist():
        hue[node : int(trie.end[node]) + 1] = HUE.get(trie.frames[trie.frame[node]].strip("[]"), -1)
    out = []
    for node, h in enumerate(hue.tolist()):
        name = trie.frames[trie.frame[node]]
        light = 55 + hashlib.md5(name.encode("utf-8", "backslashreplace")).digest()[0] % 25
        out.append("hsl(270,20%,80%)" if h < 0 else f"hsl({h},{45 if is_kernel(name) else 65}%,{light}%)")
    return out


def wall_svg(stacks: dict[Stack, int]) -> str:
    """The wall-clock flame graph as an <svg> to inline in report.html ('' without stacks)."""
    if not stacks:
        return ""
    trie = Trie.of([stacks])
    return trie_svg(
        trie,
        _colors(trie).__getitem__,
        "Wall clock: where the threads' time went (on and off the CPU)",
        "µs",
        "each process's threads split by state: running, runnable, blocked (futex, I/O, other)",
        standalone=False,
    )


def _short(frame: str) -> str:
    """The frame without its trailing argument list: ``ns::f(int)`` -> ``ns::f``; brackets earlier in the
    name stay (``(anonymous namespace)::Lock_wait::wait(int)`` -> ``(anonymous namespace)::Lock_wait::wait``)."""
    if not frame.endswith(")"):
        return frame
    depth = 0
    for i in range(len(frame) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(frame[i], 0)
        if depth == 0:
            return frame[:i] if i > 0 else frame
    return frame


def thread_groups(off: OffCpuProfile | None) -> list[SnapshotRow]:
    """threads.json per snapshot: threads grouped by identical stack, most threads first (a pt-pmp dump without
    stopping the server: /proc stacks and the tracer's last user stack of each thread)."""
    if off is None:
        return []
    return [_snapshot(s) for s in off.threads.snapshots]


def _snapshot(snap: Snapshot) -> SnapshotRow:
    groups = sorted(snap.groups, key=lambda g: (-g.count, g.state, g.user, g.kernel))
    rows = [
        ThreadGroupRow(
            count=g.count,
            state=g.state,
            wchan=g.wchan,
            stack=" ← ".join(_short(f) for f in reversed(g.user)) or NO_USER_STACK,
            kernel=" ← ".join(reversed(g.kernel)),
            comms=", ".join(f"{c} ×{n}" for c, n in sorted(g.comms.items())),
            off_cpu_ms=g.off_cpu_ms,
            runnable_ms=g.runnable_ms,
        )
        for g in groups[:MAX_GROUPS]
    ]
    return {
        "label": snap.label,
        "pid": snap.pid,
        "when": snap.when,
        "at": snap.at,
        "threads": snap.threads,
        "states": dict(sorted(snap.states.items())),
        "groups": rows,
        "more": max(0, len(groups) - MAX_GROUPS),
        "notes": list(snap.notes),
    }

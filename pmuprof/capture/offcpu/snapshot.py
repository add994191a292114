"""threads.json: a process's threads grouped by identical state and stacks, as pt-pmp groups gdb's dump."""

from __future__ import annotations

import datetime as _dt
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence

from ...model.offcpu import Snapshot, ThreadGroup
from ...tools.native.offcpu import TracerOutput
from ..proc.threads import ThreadNow
from .symbols import UserSymbols

NO_KERNEL_STACK = "kernel stacks unreadable here (/proc/PID/task/TID/stack needs CAP_SYS_ADMIN)"


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def group(
    when: str,
    at: str,
    pid: int,
    label: str,
    threads: Sequence[ThreadNow],
    user: Mapping[int, tuple[tuple[str, ...], float, float | None]] | None = None,
) -> Snapshot:
    """Group threads by (state, wchan, kernel stack, user stack); ``user`` maps tid -> (frames, off-CPU ms, ms
    since its wake-up: waiting for a CPU, None when not woken or wake-ups were not traced)."""
    user = user or {}
    members: dict[tuple, list[ThreadNow]] = defaultdict(list)
    for t in threads:
        frames = user.get(t.tid, ((), 0.0, None))[0]
        members[(t.state, t.wchan, t.kernel, frames)].append(t)
    groups = []
    for (state, wchan, kernel, frames), ts in members.items():
        waited = [user[t.tid][1] for t in ts if t.tid in user]
        queued = [q for q in (user[t.tid][2] for t in ts if t.tid in user) if q is not None]
        groups.append(
            ThreadGroup(
                len(ts),
                state,
                tuple(t.tid for t in ts),
                dict(Counter(t.comm for t in ts)),
                wchan,
                kernel,
                frames,
                "bpf" if frames else "",
                round(max(waited), 3) if waited else None,
                round(max(queued), 3) if queued else None,
            )
        )
    groups.sort(key=lambda g: (-g.count, g.state, g.kernel, g.user))
    notes = (NO_KERNEL_STACK,) if threads and not any(t.kernel for t in threads) else ()
    return Snapshot(when, at, pid, label, len(threads), dict(Counter(t.state for t in threads)), tuple(groups), notes)


def bpf_user_stacks(
    out: TracerOutput, symbols: UserSymbols, tgid: int
) -> dict[int, tuple[tuple[str, ...], float, float | None]]:
    """tid -> (user frames of its last switch-out, ms off the CPU, ms since its wake-up) for threads still off
    the CPU at the end; for those blocked all along (walked by the loader at the end), the window's length: at
    least that long. The last is None for a thread not woken (or when wake-ups were not traced)."""
    stacks: dict[int, tuple[tuple[str, ...], float, float | None]] = {
        tid: (symbols.frames(tgid, out.ustack(h)), (out.end_ns - out.t0_ns) / 1e6, None)
        for (pid, tid), h in out.idle.items()
        if pid == tgid and out.ustack(h)
    }
    return stacks | {
        o.tid: (
            symbols.frames(tgid, out.ustack(o.ustack)),
            (out.end_ns - max(o.since_ns, out.t0_ns)) / 1e6,
            (out.end_ns - max(o.wake_ns, out.t0_ns)) / 1e6 if o.wake_ns else None,
        )
        for o in out.open
        if o.tgid == tgid and out.ustack(o.ustack)
    }

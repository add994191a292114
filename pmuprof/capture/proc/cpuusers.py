"""Who used the CPUs while perf recorded: every process's CPU time (/proc/PID/stat utime + stime, all its
threads) read when the window starts and when it ends, summed per process and per cgroup (run.json
cpu_users). Reads only /proc: nothing is stopped or traced. A process born inside the window counts all
its time; one that ended inside it is not counted (its time left /proc with it).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from collections.abc import Callable, Mapping

from ...model.run import CpuUser, CpuUsers as CpuUsersFacts
from ..lifecycle import Context, Part, Source

PROC = Path("/proc")
TOP_PROCESSES = 8
TOP_CGROUPS = 5
Key = tuple[int, int]  # (pid, start time in ticks since boot): a pid reused inside the window is another process


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _stat(proc: Path, pid: int) -> tuple[str, float, int] | None:
    """(comm, utime + stime in ticks, start time in ticks) of a process; None when it is gone or unreadable."""
    text = _read(proc / str(pid) / "stat")
    at, end = text.find("("), text.rfind(")")
    fields = text[end + 2 :].split() if 0 <= at < end else []
    if len(fields) < 20:
        return None
    try:
        return text[at + 1 : end], float(fields[11]) + float(fields[12]), int(fields[19])
    except ValueError:
        return None


def scan(proc: Path = PROC) -> dict[Key, tuple[str, float]]:
    """Every process now: (pid, start time) -> (comm, CPU ticks so far)."""
    out: dict[Key, tuple[str, float]] = {}
    try:
        entries = [e.name for e in os.scandir(proc) if e.name.isdigit()]
    except OSError:
        return out
    for name in entries:
        got = _stat(proc, int(name))
        if got is not None:
            out[(int(name), got[2])] = (got[0], got[1])
    return out


def cgroup_of(pid: int, proc: Path = PROC) -> str:
    """The process's cgroup: the v2 path ("0::/system.slice/x.service"), else the first hierarchy's; "" unknown."""
    lines = _read(proc / str(pid) / "cgroup").splitlines()
    v2 = [ln.split(":", 2)[2] for ln in lines if ln.startswith("0::")]
    first = [ln.split(":", 2)[2] for ln in lines if ln.count(":") >= 2]
    return (v2 or first or [""])[0]


def users(
    before: Mapping[Key, tuple[str, float]],
    after: Mapping[Key, tuple[str, float]],
    seconds: float,
    cpus: int,
    targets: tuple[int, ...],
    cgroup: Callable[[int], str],
    hz: float,
) -> CpuUsersFacts | None:
    """The window's CPU users from two scans ``seconds`` apart: the busiest processes (and any target), the
    busiest cgroups, the targets' share; None for an empty window."""
    total = seconds * max(cpus, 1)
    if total <= 0:
        return None
    spent = {
        key: (comm, (ticks - before[key][1] if key in before else ticks) / hz) for key, (comm, ticks) in after.items()
    }
    spent = {k: v for k, v in spent.items() if v[1] > 0}
    order = sorted(spent, key=lambda k: (-spent[k][1], k[0]))
    shown = order[:TOP_PROCESSES] + [k for k in order[TOP_PROCESSES:] if k[0] in targets]
    groups: dict[str, float] = {}
    where = {k: cgroup(k[0]) for k in order}  # only processes that ran: a few hundred reads at most
    for k in order:
        groups[where[k]] = groups.get(where[k], 0.0) + spent[k][1]
    hosting = {where[k] for k in order if k[0] in targets}
    mine = [spent[k][1] for k in spent if k[0] in targets]
    return CpuUsersFacts(
        seconds=round(seconds, 3),
        cpus=cpus,
        processes=tuple(
            CpuUser(spent[k][0], round(spent[k][1], 3), round(spent[k][1] / total, 4), k[0], where[k], k[0] in targets)
            for k in shown
        ),
        cgroups=tuple(
            CpuUser(path or "(unknown)", round(s, 3), round(s / total, 4), None, path, path in hosting)
            for path, s in sorted(groups.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_CGROUPS]
        ),
        targets_share=round(sum(mine) / total, 4) if targets else None,
        counted_share=round(sum(v[1] for v in spent.values()) / total, 4),
        seen=len(spent),
    )


class CpuUsers(Source):
    """Scans /proc when it starts (just before perf's window) and when it stops (right after it)."""

    name = "cpu_users"
    with_window = True  # stopped with the per-second sources, right after perf's window

    def __init__(self, cpus: int, pids: tuple[int, ...], proc: Path = PROC, clock=time.monotonic) -> None:
        self.cpus, self.pids, self.proc, self.clock = max(cpus, 1), tuple(pids), proc, clock
        self.first: dict[Key, tuple[str, float]] = {}
        self.t0: float | None = None

    @classmethod
    def of(cls, ctx: Context) -> CpuUsers:
        return cls(ctx.run.host.nproc or os.cpu_count() or 1, ctx.pids)

    def start(self, ctx: Context) -> None:
        self.t0, self.first = self.clock(), scan(self.proc)

    def stop(self, ctx: Context) -> Part:
        if self.t0 is None:
            return Part(self.name, why_not="not started")
        last, seconds = scan(self.proc), self.clock() - self.t0
        hz = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0
        found = users(self.first, last, seconds, self.cpus, self.pids, lambda pid: cgroup_of(pid, self.proc), hz)
        return Part(self.name, fields={"cpu_users": found}, why_not="" if found else "an empty window")

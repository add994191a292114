"""The ``host_load`` derived fact: how much of the capture the host's runnable tasks waited for a CPU, and who
used the CPUs meanwhile (run.json cpu_users); ``cpu_starvation`` is the same fact for rules that only read it
beside their own evidence (it notes nothing as missing when the input has no host load)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .evidence import Summarized
from .facts import Facts

BASIS = "the host's CPU time (taken by other processes while tasks waited for a CPU)"  # "the ...": no process's samples
WAITED_MIN = 0.1  # below this share of time with a task waiting for a CPU, the host is not saturated


@dataclass(frozen=True, eq=False)
class HostLoadFact(Summarized):
    """The window's host load (model/run.py HostLoad) with the share a rule grades: ``value``, the CPU time
    other processes than the targets took (busy minus the targets' own) while runnable tasks waited for a CPU
    (``waited``: PSI when the kernel has it, else the run queue's excess over the CPUs, 1 - cpus / runnable),
    0 when they hardly waited. A server busy with its own load is CPU-bound, not crowded out."""

    value: float
    others_share: float
    targets_share: float | None
    waited: float
    waited_source: str
    runnable_avg: float
    runnable_per_cpu: float
    cpus: int
    busy_share: float
    steal_share: float
    iowait_share: float
    blocked_avg: float
    loadavg_1m: float | None
    swap_pages_per_s: float | None
    summary: str
    basis: str = BASIS
    psi_full: float | None = None  # PSI cpu full: every non-idle task waited for a CPU
    users: str = ""  # the busiest processes over the window, "stress-ng (pid 42) 61 %, ..." ("": not measured)
    cgroups: str = ""  # the busiest cgroups, likewise
    target_cpu: float | None = None  # the targets' own share of all CPUs' time

    def share_basis(self) -> str:
        return self.basis


TOP_NAMED = 4  # processes and cgroups a summary names


def cpu_starvation(facts: Facts, index: Any, missing: list[str]) -> HostLoadFact | None:
    """``host_load`` for a rule whose own evidence is something else: None, with no note, when not measured."""
    return host_load(facts, index, []) if facts.run.host_load is not None else None


def _named(users: Any, processes: bool) -> str:
    """'stress (pid 42) 61%, mariadbd (pid 7, a target) 22%' (processes) or '/user.slice 70%' (cgroups)."""
    rows = [u for u in (users.processes if processes else users.cgroups)[:TOP_NAMED] if u.share >= 0.005]
    if processes:
        return ", ".join(f"{u.name} (pid {u.pid}{', a target' if u.target else ''}) {u.share:.0%}" for u in rows)
    return ", ".join(f"{u.name}{' (a target is in it)' if u.target else ''} {u.share:.0%}" for u in rows)


def host_load(facts: Facts, index: Any, missing: list[str]) -> HostLoadFact | None:
    load = facts.run.host_load
    if load is None or not load.cpus:
        missing.append("host load not measured (run.json host_load: a pmuprof capture measures it)")
        return None
    users = facts.run.cpu_users
    queue = max(0.0, 1.0 - load.cpus / load.runnable_avg) if load.runnable_avg > 0 else 0.0
    waited, source = (
        (load.psi_cpu_some_share, "PSI cpu some") if load.psi_cpu_some_share is not None else (queue, "run queue")
    )
    if load.targets_share is None:
        missing.append("the targets' own CPU time not measured: all busy time counted as other processes'")
    others = max(0.0, load.busy_share - (load.targets_share or 0.0))
    swaps = [v for v in (load.swap_in_pages_per_s, load.swap_out_pages_per_s) if v is not None]
    swap = sum(swaps) if swaps else None
    own = f" ({load.targets_share:.0%} by the targets)" if load.targets_share is not None else ""
    named = _named(users, True) if users is not None else ""
    summary = (
        f"{load.runnable_avg:g} runnable tasks on {load.cpus} CPUs on average (at most {load.runnable_max}), "
        f"CPUs {load.busy_share:.0%} busy{own}, steal {load.steal_share:.0%}, iowait {load.iowait_share:.0%}"
        + (f", 1-minute load {load.loadavg_1m:g}" if load.loadavg_1m is not None else "")
        + f"; a runnable task waited for a CPU {waited:.0%} of the time ({source})"
        + (f"; the CPUs went to {named}" if named else "")
    )
    return HostLoadFact(
        round(others if waited >= WAITED_MIN else 0.0, 4),
        round(others, 4),
        load.targets_share,
        round(waited, 4),
        source,
        load.runnable_avg,
        round(load.runnable_avg / load.cpus, 2),
        load.cpus,
        load.busy_share,
        load.steal_share,
        load.iowait_share,
        load.blocked_avg,
        load.loadavg_1m,
        swap,
        summary,
        psi_full=load.psi_cpu_full_share,
        users=named,
        cgroups=_named(users, False) if users is not None else "",
        target_cpu=users.targets_share if users is not None and users.targets_share is not None else load.targets_share,
    )

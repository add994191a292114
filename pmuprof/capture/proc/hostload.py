"""How busy the host is while perf records: /proc/stat, /proc/vmstat, /proc/meminfo and PSI, read once a
second by the host-load source (pt-stalk's vmstat/mpstat, without running them). Reads only /proc: nothing
the server notices. The first and last reads bound the window (run.json host_load); each second's read
also gives the per-second series (series.json ``host.*``) the seconds strip draws and rules read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from collections.abc import Callable

from ...model.run import HostLoad as HostLoadFacts
from ...model.series import SHARE
from ..lifecycle import Context, Part
from ..persecond import Measure, PerSecond

PROC = Path("/proc")
BUSY = ("user", "nice", "system", "irq", "softirq", "steal")
CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="ascii", errors="replace")
    except OSError:
        return ""


def _stat(proc: Path) -> dict[str, float]:
    """/proc/stat's aggregate CPU jiffies, context switches and run queue."""
    out: dict[str, float] = {}
    for line in _read(proc / "stat").splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            out.update(zip(CPU_FIELDS, (float(v) for v in parts[1 : 1 + len(CPU_FIELDS)])))
        elif len(parts) == 2 and parts[0] in ("ctxt", "procs_running", "procs_blocked"):
            out[parts[0]] = float(parts[1])
    return out


def _keyed(text: str, keys: tuple[str, ...]) -> dict[str, float]:
    out = {}
    for line in text.splitlines():
        parts = line.replace(":", " ").split()
        if len(parts) >= 2 and parts[0] in keys:
            out[parts[0]] = float(parts[1])
    return out


def _psi_total_us(text: str, line_name: str = "some") -> float | None:
    """The ``some`` (or ``full``) line's total (µs stalled) of a /proc/pressure file; None without PSI."""
    for line in text.splitlines():
        if line.startswith(line_name + " "):
            for field in line.split():
                if field.startswith("total="):
                    return float(field[6:])
    return None


def _cpu_ticks(proc: Path, pid: int) -> float | None:
    """utime + stime of a process (all its threads), in the clock ticks /proc/stat counts in; None: gone."""
    text = _read(proc / str(pid) / "stat")
    fields = text[text.rfind(")") + 2 :].split() if ")" in text else []
    return float(fields[11]) + float(fields[12]) if len(fields) > 12 else None


def run_queue(proc: Path = PROC) -> tuple[float | None, int | None, int | None]:
    """(1-minute load average, procs_running, procs_blocked) now: two small /proc reads, for watch's polls."""
    load = _read(proc / "loadavg").split()
    stat = _stat(proc)
    running, blocked = stat.get("procs_running"), stat.get("procs_blocked")
    return (
        float(load[0]) if load else None,
        None if running is None else int(running),
        None if blocked is None else int(blocked),
    )


class Snapshot:
    """One read of the counters, at ``t`` (monotonic seconds)."""

    def __init__(self, proc: Path, clock: Callable[[], float], pids: tuple[int, ...] = ()) -> None:
        self.t = clock()
        self.stat = _stat(proc)
        self.vm = _keyed(_read(proc / "vmstat"), ("pswpin", "pswpout"))
        self.mem = _keyed(_read(proc / "meminfo"), ("MemAvailable",))
        cpu = _read(proc / "pressure" / "cpu")
        self.psi_cpu = _psi_total_us(cpu)
        self.psi_cpu_full = _psi_total_us(cpu, "full")
        self.psi_mem = _psi_total_us(_read(proc / "pressure" / "memory"))
        self.targets = {pid: _cpu_ticks(proc, pid) for pid in pids}
        load = _read(proc / "loadavg").split()
        self.loadavg = float(load[0]) if load else None


class HostLoad(PerSecond):
    """The host-load source: a Snapshot a second (and one when it stops); run.json host_load summarizes the
    window from the first to the last, series.json has each second."""

    name = "host"
    final = True
    measures = (
        Measure("host.busy", SHARE, "all CPUs' busy time (user, nice, system, irq, softirq, steal)", show=True),
        Measure("host.runnable", "tasks", "runnable tasks (procs_running, pmuprof's own poll included)", show=True),
        Measure("host.blocked", "tasks", "tasks in uninterruptible sleep (procs_blocked), mostly I/O"),
        Measure("host.targets_cpu", SHARE, "the targets' own CPU time over all CPUs' time"),
        Measure("host.steal", SHARE, "CPU time the hypervisor gave to other guests"),
        Measure("host.iowait", SHARE, "idle CPU time with I/O outstanding"),
        Measure("host.psi_cpu", SHARE, "time some runnable task waited for a CPU (PSI cpu some)"),
        Measure("host.psi_cpu_full", SHARE, "time every non-idle task waited for a CPU (PSI cpu full)"),
        Measure("host.context_switches", "/s", "context switches per second, all CPUs"),
    )

    def __init__(self, cpus: int, pids: tuple[int, ...] = (), proc: Path = PROC, **kw: Any) -> None:
        super().__init__(**kw)
        self.cpus, self.pids, self.proc = max(cpus, 1), tuple(pids), proc
        self.samples: list[Snapshot] = []

    @classmethod
    def of(cls, ctx: Context) -> HostLoad:
        return cls(ctx.run.host.nproc or 1, ctx.pids)

    def read(self) -> Snapshot:
        return Snapshot(self.proc, self.clock, self.pids)

    def keep(self, second: int, reading: Snapshot) -> dict[str, float | None]:
        prev = self.samples[-1] if self.samples else None
        self.samples.append(reading)
        return {
            "host.runnable": reading.stat.get("procs_running"),
            "host.blocked": reading.stat.get("procs_blocked"),
            **(between(prev, reading) if prev is not None else {}),
        }

    def finish(self, ctx: Context) -> Part:
        load = summarize(self.samples, self.cpus, self.interval) if len(self.samples) > 1 else None
        return Part(self.name, fields={"host_load": load})


def between(a: Snapshot, b: Snapshot) -> dict[str, float | None]:
    """The rates and shares from one snapshot to the next (the series' values of the second of ``b``)."""
    secs = b.t - a.t
    jiffies = {k: b.stat.get(k, 0.0) - a.stat.get(k, 0.0) for k in CPU_FIELDS}
    total = sum(jiffies.values())
    if secs <= 0 or total <= 0:
        return {}
    spent = _spent(a, b)
    return {
        "host.busy": round(sum(jiffies[k] for k in BUSY) / total, 4),
        "host.targets_cpu": round(min(1.0, sum(spent) / total), 4) if spent else None,
        "host.steal": round(jiffies["steal"] / total, 4),
        "host.iowait": round(jiffies["iowait"] / total, 4),
        "host.psi_cpu": _psi_share(a.psi_cpu, b.psi_cpu, secs),
        "host.psi_cpu_full": _psi_share(a.psi_cpu_full, b.psi_cpu_full, secs),
        "host.context_switches": round((b.stat.get("ctxt", 0.0) - a.stat.get("ctxt", 0.0)) / secs, 1),
    }


def _spent(a: Snapshot, b: Snapshot) -> list[float]:
    """The CPU ticks each target used from one snapshot to the other (a target gone at either: left out)."""
    out = []
    for pid, first in a.targets.items():
        last = b.targets.get(pid)
        if first is not None and last is not None:
            out.append(last - first)
    return out


def _psi_share(first: float | None, last: float | None, secs: float) -> float | None:
    return round(min(1.0, (last - first) / 1e6 / secs), 4) if first is not None and last is not None else None


def summarize(samples: list[Snapshot], cpus: int, interval: float | None = None) -> HostLoadFacts | None:
    """The HostLoad of a window from its first to its last snapshot."""
    a, b = samples[0], samples[-1]
    secs = b.t - a.t
    jiffies = {k: b.stat.get(k, 0.0) - a.stat.get(k, 0.0) for k in CPU_FIELDS}
    total = sum(jiffies.values())
    if secs <= 0 or total <= 0:
        return None
    running = [s.stat["procs_running"] for s in samples if "procs_running" in s.stat]
    blocked = [s.stat["procs_blocked"] for s in samples if "procs_blocked" in s.stat]
    mem = [s.mem["MemAvailable"] * 1024 for s in samples if "MemAvailable" in s.mem]

    def rate(key: str) -> float | None:
        return (b.vm[key] - a.vm[key]) / secs if key in a.vm and key in b.vm else None

    def psi(first: float | None, last: float | None) -> float | None:
        return min(1.0, (last - first) / 1e6 / secs) if first is not None and last is not None else None

    spent = _spent(a, b)
    return HostLoadFacts(
        seconds=round(secs, 3),
        cpus=cpus,
        busy_share=round(sum(jiffies[k] for k in BUSY) / total, 4),
        targets_share=round(min(1.0, sum(spent) / total), 4) if spent else None,
        steal_share=round(jiffies["steal"] / total, 4),
        iowait_share=round(jiffies["iowait"] / total, 4),
        runnable_avg=round(sum(running) / len(running), 2) if running else 0.0,
        runnable_max=int(max(running)) if running else 0,
        blocked_avg=round(sum(blocked) / len(blocked), 2) if blocked else 0.0,
        loadavg_1m=b.loadavg,
        context_switches_per_s=round((b.stat.get("ctxt", 0.0) - a.stat.get("ctxt", 0.0)) / secs, 1),
        swap_in_pages_per_s=rate("pswpin"),
        swap_out_pages_per_s=rate("pswpout"),
        mem_available_min_bytes=int(min(mem)) if mem else None,
        psi_cpu_some_share=psi(a.psi_cpu, b.psi_cpu),
        psi_memory_some_share=psi(a.psi_mem, b.psi_mem),
        interval_s=interval,
        psi_cpu_full_share=psi(a.psi_cpu_full, b.psi_cpu_full),
    )

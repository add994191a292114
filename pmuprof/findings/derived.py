"""Derived facts: spin-wait cost on this host, NUMA placement of the target, sample count."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from collections.abc import Callable

from .evidence import Evidence, Summarized, number as say_number, pct
from .facts import Facts, dig, number
from .bufpool import pool_fit
from .hostload import cpu_starvation, host_load
from .latches import candidates, latch_words
from .offcpumatch import offcpu_wait_latches
from .stackmatch import StackIndex

# Pre-Skylake PAUSE took about 10 cycles, so one delay unit (50 PAUSEs) was ~500 cycles;
# WL#12616 sizes innodb_spin_wait_pause_multiplier to keep that (50/10 = 5 for 10x slower PAUSE).
CYCLES_PER_UNIT_TARGET = 500.0
SLOW_PAUSE_CYCLES = 30.0  # MariaDB my_cpu_init(): > 30 cycles per PAUSE halves the multiplier


def _default_delay(facts: Facts) -> int:
    if facts.family == "mariadb" and (not facts.version or facts.version >= (10, 3, 5)):
        return 4
    return 6


def _pause(facts: Facts, missing: list[str]) -> tuple[float | None, float | None]:
    pause = facts.run.host.pause
    cycles, ns, hz = (pause.cycles, pause.ns, pause.tsc_hz) if pause else (None, None, None)
    if ns is None and cycles and hz:
        ns = cycles / hz * 1e9
    if cycles is None:
        missing.append("PAUSE latency not measured on this host (run.json host.pause)")
    return cycles, ns


def _mariadb_calibrates(version: tuple[int, ...]) -> bool:
    """MDEV-19845: MariaDB 10.3.17 / 10.4.7 and later scale ut_delay by my_cpu_relax_multiplier/4."""
    return not version or version >= (10, 4, 7) or (10, 3, 17) <= version < (10, 4)


def _per_unit(facts: Facts, pause_cycles: float | None, missing: list[str]) -> tuple[float, str, bool]:
    """PAUSE instructions per unit of innodb_spin_wait_delay, where it came from, tunable?"""
    if facts.family == "mariadb" and not _mariadb_calibrates(facts.version):
        return 50.0, "hard-coded 50 (MariaDB before 10.3.17 / 10.4.7 has no PAUSE calibration, MDEV-19845)", False
    if facts.family == "mariadb":
        relax = facts.server.my_cpu_relax_multiplier if facts.server else None
        if relax is not None:
            return relax / 4, f"my_cpu_relax_multiplier {relax:g} / 4 (MariaDB self-calibration)", False
        relax = number(dig(facts.run, "host.pause.mariadb.my_cpu_relax_multiplier"))
        if relax is not None:
            missing.append(
                "my_cpu_relax_multiplier not read from the server: used the value MariaDB's calibration gives on this host"
            )
            return (
                relax / 4,
                f"my_cpu_relax_multiplier {relax:g} / 4 (MariaDB's calibration repeated by pmuprof)",
                False,
            )
        if pause_cycles is None:  # MariaDB's my_cpu_init(): 200, halved when PAUSE takes over 30 cycles
            missing.append(
                "my_cpu_relax_multiplier not read and PAUSE not measured: assumed 200 (100 on a slow-PAUSE CPU)"
            )
            return 50.0, "assumed my_cpu_relax_multiplier 200 / 4; 100 / 4 on a slow-PAUSE CPU, half the PAUSEs", False
        guess = 100.0 if pause_cycles > SLOW_PAUSE_CYCLES else 200.0
        missing.append(f"my_cpu_relax_multiplier not read from the process: assumed {guess:g} from the PAUSE latency")
        return guess / 4, f"assumed my_cpu_relax_multiplier {guess:g} / 4", False
    value = number(facts.variable("innodb_spin_wait_pause_multiplier"))
    if value is not None:
        return value, "innodb_spin_wait_pause_multiplier", True
    if facts.family is not None and facts.version and facts.version < (8, 0, 16):
        return 50.0, "hard-coded 50 (before MySQL 8.0.16)", False
    if facts.server is not None:
        missing.append("innodb_spin_wait_pause_multiplier not reported: assumed 50")
    return 50.0, "assumed 50 (the MySQL default)", facts.family is None or not facts.version


@dataclass(frozen=True, eq=False)
class SpinCost(Summarized):
    """One maximal ut_delay on this host, from the server's settings and the measured PAUSE latency."""

    delay: float
    default_delay: int
    delay_raised: bool
    delay_known: bool  # read from the server (else the default is assumed, and said so)
    round_name: str  # what one delay is called in this server's code: 'ut_delay', 'srw_pause' (10.6+)
    sync_spin_loops: float
    pauses_per_unit: float
    multiplier_source: str
    multiplier_tunable: bool
    max_pauses: float
    pause_cycles: float | None
    pause_ns: float | None
    max_cycles: float | None
    max_us: float | None
    slow_pause: bool | None
    recommended_multiplier: int | None
    spin_phase_us: float | None
    value: float | None  # max_us
    summary: str


@dataclass(frozen=True, eq=False)
class NumaPlacement(Evidence):
    value: float | None  # remote_memory_share
    remote_memory_share: float | None
    host_nodes: int | None
    cpu_nodes: tuple[str, ...]
    spans_nodes: bool
    memory_nodes: tuple[str, ...]
    zone_reclaim_mode: int | None

    def words(self, share: bool) -> str:
        nodes = ", ".join(self.cpu_nodes) or "?"
        remote = self.remote_memory_share
        return f"runs on node(s) {nodes} of {self.host_nodes or '?'}; remote memory " + (
            pct(remote) if remote is not None else "not known"
        )


@dataclass(frozen=True, eq=False)
class SampleCount(Evidence):
    value: int

    def words(self, share: bool) -> str:
        return f"{say_number(self.value)} samples"


@dataclass(frozen=True, eq=False)
class WaitLatches(Summarized):
    """Which latches the spin and wait samples are for: shares of the process's samples."""

    value: float  # identified
    waiting: float
    identified: float
    summary: str
    top: str
    top_share: float


def spin_cost(facts: Facts, index: Any, missing: list[str]) -> SpinCost:
    """How long one maximal ut_delay / spin round lasts here, and what to set instead."""
    default = _default_delay(facts)
    if facts.server is None:
        missing.append(facts.server_missing)
    delay = number(facts.variable("innodb_spin_wait_delay"))
    known = delay is not None
    if delay is None:
        delay = float(default)
        missing.append(f"innodb_spin_wait_delay unknown: the cost is given at the default {default}")
    loops = number(facts.variable("innodb_sync_spin_loops"))
    loops = 30.0 if loops is None else loops
    cycles, ns = _pause(facts, missing)
    per_unit, source, tunable = _per_unit(facts, cycles, missing)
    pauses = delay * per_unit
    out: dict[str, Any] = {
        "delay": delay,
        "default_delay": default,
        "delay_raised": delay > default,
        "delay_known": known,
        "round_name": _round_name(facts),
        "sync_spin_loops": loops,
        "pauses_per_unit": per_unit,
        "multiplier_source": source,
        "multiplier_tunable": tunable,
        "max_pauses": pauses,
        "pause_cycles": cycles,
        "pause_ns": ns,
        "max_cycles": pauses * cycles if cycles is not None else None,
        "max_us": pauses * ns / 1000 if ns is not None else None,
        "slow_pause": cycles > SLOW_PAUSE_CYCLES if cycles is not None else None,
        "recommended_multiplier": _recommended_multiplier(cycles) if tunable else None,
    }
    out["spin_phase_us"] = out["max_us"] * loops if out["max_us"] is not None else None
    out["value"] = out["max_us"]
    out["summary"] = _summary(out)
    return SpinCost(**out)


def _recommended_multiplier(cycles: float | None) -> int:
    if not cycles:
        return 5  # WL#12616's suggestion for a PAUSE ~10x slower than pre-Skylake
    return int(min(100, max(1, round(CYCLES_PER_UNIT_TARGET / cycles))))


def _round_name(facts: Facts) -> str:
    """MariaDB 10.6+ spins with srw_pause(my_cpu_relax_multiplier / 4 × innodb_spin_wait_delay) per round
    (storage/innobase/sync/srw_lock.cc); before, and in MySQL, ut_delay(random up to the delay) × multiplier."""
    if facts.family == "mariadb" and facts.version:
        return "srw_pause" if facts.version >= (10, 6) else "ut_delay"
    return "ut_delay" if facts.family in ("mysql", "percona") else "ut_delay / srw_pause"


def _summary(c: dict[str, Any]) -> str:
    """The arithmetic in words; at the default delay, said so, when the server's value is not known."""
    name = "one spin round's" if c["round_name"] == "srw_pause" else "one maximal"
    text = (
        f"{name} {c['round_name']} = {c['delay']:g} × {c['pauses_per_unit']:g} "
        f"[{c['multiplier_source']}] = {c['max_pauses']:,.0f} PAUSEs"
    )
    if c["max_cycles"] is None:
        text += (
            f" (PAUSE not measured here: ≈{c['max_pauses'] * 10:,.0f} cycles at 10 cycles/PAUSE "
            f"before Skylake, ≈{c['max_pauses'] * 140:,.0f} at 140 on Skylake-SP)"
        )
    else:
        text += f" × {c['pause_cycles']:.0f} cycles = {c['max_cycles']:,.0f} cycles"
    if c["max_us"] is not None:
        text += (
            f" ≈ {c['max_us']:.1f} µs on this host; up to {c['sync_spin_loops']:g} such rounds ≈ "
            f"{c['spin_phase_us']:,.0f} µs before a thread sleeps"
        )
    if not c["delay_known"]:
        text = (
            f"at the default innodb_spin_wait_delay {c['default_delay']} (the server's value is not known: "
            f"no server facts), {text}; each unit it was raised above the default adds "
            f"{c['pauses_per_unit']:g} PAUSEs to every round"
        )
    return text


def numa_placement(facts: Facts, index: Any, missing: list[str]) -> NumaPlacement | None:
    """Host NUMA nodes, the nodes the target runs on, and how much of its memory is remote."""
    host_nodes = facts.run.host.numa_nodes
    numa = facts.target.numa if facts.target else None
    zone = facts.run.host.zone_reclaim_mode
    if numa is None:
        missing.append("target NUMA placement not in run.json (targets[].numa)")
    if zone is None:
        missing.append("vm.zone_reclaim_mode not in run.json (host.zone_reclaim_mode)")
    if numa is None and not host_nodes and zone is None:
        return None
    cpu_nodes = [str(n) for n in (numa.cpu_nodes if numa else ())]
    mem = {str(k): float(v) for k, v in (numa.memory_pages if numa else {}).items()}
    mem_total = sum(mem.values())
    remote = sum(v for k, v in mem.items() if cpu_nodes and k not in cpu_nodes)
    share = remote / mem_total if mem_total and cpu_nodes else None
    return NumaPlacement(
        share,
        share,
        len(host_nodes) or (numa.nodes_on_host if numa else None),
        tuple(cpu_nodes),
        len(cpu_nodes) > 1,
        tuple(sorted(mem)),
        zone,
    )


def samples(facts: Facts, index: Any, missing: list[str]) -> SampleCount:
    return SampleCount(index.total)


def wait_latches(facts: Facts, index: Any, missing: list[str]) -> WaitLatches:
    """Which latches the process's spin and wait samples are for (the latch attribution, summed)."""
    by_latch: dict[str, int] = {}
    table = index.attributor.latches if index.attributor else {}
    waits = index.waits()
    waited = int(waits.counts.sum())
    for latch, count in zip(waits.latch, waits.counts.tolist()):
        by_latch[latch] = by_latch.get(latch, 0) + count
    total = index.total or 1
    ranked = sorted(by_latch.items(), key=lambda kv: (-kv[1], kv[0]))

    def name(latch: str) -> str:
        if len(candidates(latch)) > 1:  # "page latch or index tree latch"
            return latch_words(latch, table) or "unidentified"
        return table[latch].name.split(" (")[0] if latch in table else "unidentified"

    known = sum(n for latch, n in ranked if latch != "unidentified")
    summary = ", ".join(f"{name(latch)} {n / total:.1%}" for latch, n in ranked[:4])
    return WaitLatches(
        known / total,
        waited / total,
        known / total,
        summary,
        name(ranked[0][0]) if ranked else "",
        ranked[0][1] / total if ranked else 0.0,
    )


DERIVED_FACTS: dict[str, Callable[[Facts, StackIndex, list[str]], Evidence | None]] = {
    "spin_cost": spin_cost,
    "numa_placement": numa_placement,
    "samples": samples,
    "wait_latches": wait_latches,
    "offcpu_wait_latches": offcpu_wait_latches,
    "host_load": host_load,
    "cpu_starvation": cpu_starvation,
    "pool_fit": pool_fit,
}

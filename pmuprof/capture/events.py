"""Default PMU event sets per CPU family (pmu-facts §5): IPC, PAUSE, HITM, remote DRAM, stalls, locks."""

from __future__ import annotations

from collections.abc import Callable, Iterable

Event = tuple[str, str]  # (label used in counters.json and rules, libpfm4 event name)

_SKYLAKE_SERVER: tuple[Event, ...] = (
    ("pause_inst", "ROB_MISC_EVENTS:PAUSE_INST"),
    ("mclear_memord", "MACHINE_CLEARS:MEMORY_ORDERING"),
    ("lock_loads", "MEM_INST_RETIRED:LOCK_LOADS"),
    ("stalls_total", "CYCLE_ACTIVITY:STALLS_TOTAL"),
    ("hitm_local", "MEM_LOAD_L3_HIT_RETIRED:XSNP_HITM"),
    ("hitm_remote", "MEM_LOAD_L3_MISS_RETIRED:REMOTE_HITM"),
    ("remote_dram", "MEM_LOAD_L3_MISS_RETIRED:REMOTE_DRAM"),
    ("local_dram", "MEM_LOAD_L3_MISS_RETIRED:LOCAL_DRAM"),
)
_ICELAKE_SERVER: tuple[Event, ...] = (("pause_inst", "MISC_RETIRED:PAUSE_INST"),) + _SKYLAKE_SERVER[1:]
_SAPPHIRE_RAPIDS: tuple[Event, ...] = (
    ("pause_cycles", "CPU_CLK_UNHALTED:PAUSE"),
    ("pause_inst", "CPU_CLK_UNHALTED:PAUSE_INST"),
    ("mclear_memord", "MACHINE_CLEARS:MEMORY_ORDERING"),
    ("lock_loads", "MEM_INST_RETIRED:LOCK_LOADS"),
    ("hitm_local", "MEM_LOAD_L3_HIT_RETIRED:XSNP_FWD"),
    ("hitm_remote", "MEM_LOAD_L3_MISS_RETIRED:REMOTE_HITM"),
    ("remote_dram", "MEM_LOAD_L3_MISS_RETIRED:REMOTE_DRAM"),
    ("local_dram", "MEM_LOAD_L3_MISS_RETIRED:LOCAL_DRAM"),
)
_BROADWELL_SERVER: tuple[Event, ...] = (  # no PAUSE event before Skylake (PAUSE is ~10 cycles there)
    ("mclear_memord", "MACHINE_CLEARS:MEMORY_ORDERING"),
    ("lock_loads", "MEM_UOPS_RETIRED:LOCK_LOADS"),
    ("hitm_local", "MEM_LOAD_UOPS_L3_HIT_RETIRED:XSNP_HITM"),
    ("hitm_remote", "MEM_LOAD_UOPS_L3_MISS_RETIRED:REMOTE_HITM"),
    ("remote_dram", "MEM_LOAD_UOPS_L3_MISS_RETIRED:REMOTE_DRAM"),
    ("local_dram", "MEM_LOAD_UOPS_L3_MISS_RETIRED:LOCAL_DRAM"),
)
_ZEN4: tuple[Event, ...] = (  # AMD has no PAUSE counter: PAUSE cost comes from calibration
    ("lock_loads", "RETIRED_LOCK_INSTRUCTIONS:BUS_LOCK"),
    ("remote_dram", "ANY_DATA_CACHE_FILLS_FROM_SYSTEM:DRAM_IO_FAR"),
    ("local_dram", "ANY_DATA_CACHE_FILLS_FROM_SYSTEM:DRAM_IO_NEAR"),
)
_ZEN3: tuple[Event, ...] = (
    ("lock_loads", "RETIRED_LOCK_INSTRUCTIONS:BUS_LOCK"),
    ("remote_dram", "ANY_DATA_CACHE_FILLS_FROM_SYSTEM:MEM_IO_RMT"),
    ("local_dram", "ANY_DATA_CACHE_FILLS_FROM_SYSTEM:MEM_IO_LCL"),
)

EVENT_SETS: dict[str, tuple[Event, ...]] = {
    "skx": _SKYLAKE_SERVER,
    "clx": _SKYLAKE_SERVER,
    "icx": _ICELAKE_SERVER,
    "spr": _SAPPHIRE_RAPIDS,
    "emr": _SAPPHIRE_RAPIDS,
    "bdx": _BROADWELL_SERVER,
    "zen4": _ZEN4,
    "zen3": _ZEN3,
}
# libpfm4 PMU model for each microarchitecture (LIBPFM_FORCE_PMU names); EMR uses the SPR tables.
PFM_MODELS = {
    "skx": "skx",
    "clx": "clx",
    "icx": "icx",
    "spr": "spr",
    "emr": "spr",
    "bdx": "bdw_ep",
    "zen4": "amd64_fam19h_zen4",
    "zen3": "amd64_fam19h_zen3",
}


def default_events(microarch: str) -> tuple[Event, ...]:
    return EVENT_SETS.get(microarch, ())


def encode_set(
    microarch: str, encode: Callable[[Iterable[str]], list[dict]]
) -> tuple[list[tuple[str, str]], list[str]]:
    """(label, perf spelling) for this CPU's set, plus notes on events libpfm4 could not encode."""
    wanted = default_events(microarch)
    if not wanted:
        return [], [f"no curated PMU event set for microarchitecture {microarch!r}: only cycles and instructions"]
    encoded = {e.get("name"): e for e in encode([name for _, name in wanted])}
    out, notes = [], []
    for label, name in wanted:
        entry = encoded.get(name, {})
        if entry.get("perf"):
            out.append((label, entry["perf"]))
        else:
            notes.append(f"{name}: {entry.get('error', 'not encoded')}")
    return out, notes

"""The incident verdicts of a sampled window: derived values judged at the thresholds the rules' own confirm and
refute items use (docs/rules.md: each incident rule's "Confirmed by" / "Refuted by", and "Server counters" for
what each counter counts and in which versions it exists).

Each kind is ``confirmed`` when its confirming counters crossed those thresholds, ``refuted`` when its refuting
counters held, else ``neither``. These are the tests' ground truth, sampled on a connection of their own and
independent of pmuprof's capture; they never look at stacks (the CPU share of the TLS handshake, say, is the
rules' business). Where a rule needs more than a window of status gives (the oldest transaction), the truth
reads it from the server directly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

# the thresholds (those no published source gives are judgement; each rule's doc says which)
HLL_RISING_SHARE = 0.7  # the history list grows in at least 70 % of the intervals
HLL_MIN_RISE = 1000  # and by at least max(1000, half the write commits of the window)
ALTER_SHARE = 0.5  # an ALTER / OPTIMIZE / CREATE INDEX runs in at least half the samples
TMP_DISK_PER_S, TMP_DISK_SHARE, TMP_DISK_QUIET = 1.0, 0.25, 0.1
MERGE_PER_S, MERGE_SHARE = 1.0, 0.1
QC_WRITE_SHARE, QC_HIT_LOW, QC_HIT_HIGH = 0.1, 0.2, 0.5
TC_MISSES_PER_S, TC_MISS_RATIO, TC_QUIET = 50.0, 0.1, 1.0
TC_OVERFLOW_SHARE, TC_NO_OVERFLOW = 0.5, 0.1  # evictions per miss: a cache too small evicts for every miss
CONN_PER_S, CONN_QUIET = 20.0, 1.0
TLS_SHARE = 0.9  # Ssl_accepts ≈ Connections: every connection does a full handshake
LOCK_WAITERS, LOCK_WAIT_SHARE, LOCK_TIME_MS_PER_S = 2, 0.5, 500.0


@dataclass(frozen=True)
class Verdict:
    state: str  # confirmed | refuted | neither
    why: str


KINDS = (
    "purge_lag",
    "online_ddl",
    "table_cache",
    "tmp_disk",
    "sort_merge",
    "query_cache",
    "connection_churn",
    "tls_handshakes",
    "hot_rows",
)


def _share(values: list, test: Callable[[Any], bool]) -> float:
    return sum(1 for v in values if test(v)) / len(values) if values else 0.0


def derive(
    samples: list,
    rates: Mapping[str, float],
    gauges: Mapping,
    variables: Mapping[str, str],
    oldest: dict,
    seconds: float,
) -> dict[str, Any]:
    """The values the verdicts read, each a number a report can show."""
    hll = [s.status.get("history_length", 0) for s in samples]
    steps = [b - a for a, b in zip(hll, hll[1:])]
    writes = sum(rates.get(n, 0.0) for n in ("Com_insert", "Com_update", "Com_delete", "Com_replace"))
    tc_hits, tc_misses = rates.get("Table_open_cache_hits"), rates.get("Table_open_cache_misses")
    selects = rates.get("Com_select", 0.0)
    sorts = rates.get("Sort_scan", 0.0) + rates.get("Sort_range", 0.0)
    waits = [s.status.get("Innodb_row_lock_current_waits", 0) for s in samples]
    connections = rates.get("Connections", 0.0)
    return {
        "window_s": round(seconds, 3),
        "hll_start": hll[0],
        "hll_net": hll[-1] - hll[0],
        "hll_per_s": round((hll[-1] - hll[0]) / seconds, 1),
        "hll_rising_share": round(_share(steps, lambda d: d > 0), 3),
        "writes_per_s": round(writes, 1),
        "writes_in_window": round(writes * seconds),
        "oldest_trx": oldest,
        "alter_share": round(_share([s.alter for s in samples], lambda n: n > 0), 3),
        "mdl_wait_samples": sum(1 for s in samples if s.mdl_waiters > 0),
        "tmp_disk_share": round(rates.get("Created_tmp_disk_tables", 0.0) / rates["Created_tmp_tables"], 3)
        if rates.get("Created_tmp_tables", 0.0) > 0
        else 0.0,
        "merge_share": round(rates.get("Sort_merge_passes", 0.0) / sorts, 3) if sorts > 0 else 0.0,
        "query_cache_on": variables.get("query_cache_type", "OFF") not in ("OFF", "0")
        and int(variables.get("query_cache_size", "0") or 0) > 0,
        # MariaDB counts query-cache hits in Com_select (docs/rules.md, Com_select): hits / Com_select
        "qc_hit_ratio": round(rates.get("Qcache_hits", 0.0) / selects, 4) if selects > 0 else 0.0,
        "qc_write_share": round(writes / selects, 3) if selects > 0 else 0.0,
        "tc_miss_ratio": round(tc_misses / (tc_hits + tc_misses), 3) if tc_misses and tc_hits is not None else 0.0,
        "tc_has_miss_counters": tc_misses is not None,
        "tc_overflow_share": round(rates.get("Table_open_cache_overflows", 0.0) / tc_misses, 3) if tc_misses else 0.0,
        "open_tables_max": gauges.get("Open_tables", {}).get("max", 0),
        "tls_share": round(rates.get("Ssl_accepts", 0.0) / connections, 3) if connections > 0 else 0.0,
        "thread_cache_miss": round(rates.get("Threads_created", 0.0) / connections, 3) if connections > 0 else 0.0,
        "server_cpu": rates.get("server_cpu_s", float("nan")),
        "cpu_ms_per_connection": round(1000 * rates.get("server_cpu_s", 0.0) / connections, 2)
        if connections > 0
        else 0.0,
        "lock_wait_share": round(_share(waits, lambda n: n >= LOCK_WAITERS), 3),
        "lock_waiters_max": max(waits),
        "lock_time_ms_per_s": rates.get("Innodb_row_lock_time", 0.0),
    }


def _purge(d: Mapping, r: Mapping, v: Mapping) -> tuple[str, str]:
    need = max(HLL_MIN_RISE, d["writes_in_window"] / 2)
    age = d["oldest_trx"].get("age_s")
    seen = (
        f"history list {d['hll_start']} {d['hll_net']:+d} ({d['hll_per_s']}/s, rising in {d['hll_rising_share']:.0%})"
    )
    if d["hll_net"] <= 0:
        return "refuted", seen
    held = age is not None and age + 1 > d["window_s"]  # whole seconds: open since before the window began
    if d["hll_rising_share"] >= HLL_RISING_SHARE and d["hll_net"] >= need and held:
        return "confirmed", f"{seen}; oldest transaction {age} s ({d['oldest_trx'].get('isolation')})"
    return (
        "neither",
        f"{seen}; needs +{need:.0f} rising in {HLL_RISING_SHARE:.0%} and a transaction older than the window",
    )


def _ddl(d: Mapping, r: Mapping, v: Mapping) -> tuple[str, str]:
    started = sum(r.get(n, 0.0) for n in ("Com_alter_table", "Com_optimize", "Com_create_index"))
    seen = f"ALTER running in {d['alter_share']:.0%} of samples, {started:.2f} started/s, MDL waits in {d['mdl_wait_samples']} samples"
    if d["alter_share"] >= ALTER_SHARE:
        return "confirmed", seen
    if d["alter_share"] == 0 and started == 0:
        return "refuted", seen
    return "neither", seen


def _table_cache(d: Mapping, r: Mapping, v: Mapping) -> tuple[str, str]:
    cap = int(v.get("table_open_cache", "0") or 0)
    if d["tc_has_miss_counters"]:
        misses = r["Table_open_cache_misses"]
        seen = (
            f"{misses:.0f} misses/s, miss ratio {d['tc_miss_ratio']:.1%}, {d['tc_overflow_share']:.2f} evictions a "
            f"miss, Open_tables max {d['open_tables_max']} (cache {cap})"
        )
        full = d["tc_overflow_share"] >= TC_OVERFLOW_SHARE
        if misses >= TC_MISSES_PER_S and d["tc_miss_ratio"] >= TC_MISS_RATIO and full:
            return "confirmed", seen
        quiet = misses < TC_QUIET or (misses and d["tc_overflow_share"] < TC_NO_OVERFLOW)
        return ("refuted" if quiet else "neither"), seen
    opened = r.get("Opened_tables", 0.0)  # MariaDB 10.2: no Table_open_cache_* counters
    seen = f"{opened:.0f} Opened_tables/s, Open_tables max {d['open_tables_max']} (cache {cap})"
    if opened >= TC_MISSES_PER_S and d["open_tables_max"] >= cap:
        return "confirmed", seen
    return ("refuted" if opened < TC_QUIET else "neither"), seen


def _tmp_disk(d: Mapping, r: Mapping, v: Mapping) -> tuple[str, str]:
    disk = r.get("Created_tmp_disk_tables", 0.0)
    seen = (
        f"{disk:.1f} on-disk temporary tables/s, {d['tmp_disk_share']:.0%} of {r.get('Created_tmp_tables', 0.0):.1f}/s"
    )
    if disk >= TMP_DISK_PER_S and d["tmp_disk_share"] >= TMP_DISK_SHARE:
        return "confirmed", seen
    return ("refuted" if disk < TMP_DISK_QUIET else "neither"), seen


def _merge(d: Mapping, r: Mapping, v: Mapping) -> tuple[str, str]:
    merges = r.get("Sort_merge_passes", 0.0)
    seen = f"{merges:.1f} sort merge passes/s, {d['merge_share']:.0%} of sorts"
    if merges >= MERGE_PER_S and d["merge_share"] > MERGE_SHARE:
        return "confirmed", seen
    return ("refuted" if merges == 0 else "neither"), seen


def _query_cache(d: Mapping, r: Mapping, v: Mapping) -> tuple[str, str]:
    seen = (
        f"query cache {'on' if d['query_cache_on'] else 'off'}, hit ratio {d['qc_hit_ratio']:.1%} (Qcache_hits/Com_select), "
        f"writes {d['qc_write_share']:.0%} of selects"
    )
    if not d["query_cache_on"] or d["qc_hit_ratio"] >= QC_HIT_HIGH:
        return "refuted", seen
    if d["qc_write_share"] >= QC_WRITE_SHARE and d["qc_hit_ratio"] < QC_HIT_LOW:
        return "confirmed", seen
    return "neither", seen


def _churn(d: Mapping, r: Mapping, v: Mapping) -> tuple[str, str]:
    conns = r.get("Connections", 0.0)
    seen = f"{conns:.1f} connections/s, TLS {d['tls_share']:.0%}, threads created {d['thread_cache_miss']:.0%} of them"
    if conns >= CONN_PER_S:
        return "confirmed", seen
    return ("refuted" if conns < CONN_QUIET else "neither"), seen


def _tls(d: Mapping, r: Mapping, v: Mapping) -> tuple[str, str]:
    accepts = r.get("Ssl_accepts", 0.0)
    seen = (
        f"{accepts:.1f} TLS handshakes/s, {d['tls_share']:.0%} of {r.get('Connections', 0.0):.1f} connections/s, "
        f"server CPU {d['cpu_ms_per_connection']:.1f} ms per connection"
    )
    if r.get("Connections", 0.0) >= CONN_QUIET and d["tls_share"] >= TLS_SHARE:
        return "confirmed", seen
    return ("refuted" if accepts == 0 else "neither"), seen


def _hot_rows(d: Mapping, r: Mapping, v: Mapping) -> tuple[str, str]:
    seen = (
        f"≥{LOCK_WAITERS} row-lock waiters in {d['lock_wait_share']:.0%} of samples (max {d['lock_waiters_max']}), "
        f"{d['lock_time_ms_per_s']:.0f} ms waited/s, {r.get('Innodb_row_lock_waits', 0.0):.1f} waits/s"
    )
    if d["lock_wait_share"] >= LOCK_WAIT_SHARE or d["lock_time_ms_per_s"] >= LOCK_TIME_MS_PER_S:
        return "confirmed", seen
    if d["lock_time_ms_per_s"] == 0 and d["lock_waiters_max"] == 0:
        return "refuted", seen
    return "neither", seen


JUDGES: dict[str, Callable[[Mapping, Mapping, Mapping], tuple[str, str]]] = {
    "purge_lag": _purge,
    "online_ddl": _ddl,
    "table_cache": _table_cache,
    "tmp_disk": _tmp_disk,
    "sort_merge": _merge,
    "query_cache": _query_cache,
    "connection_churn": _churn,
    "tls_handshakes": _tls,
    "hot_rows": _hot_rows,
}


def verdicts(derived: Mapping, rates: Mapping, variables: Mapping) -> dict[str, Verdict]:
    return {kind: Verdict(*JUDGES[kind](derived, rates, variables)) for kind in KINDS}

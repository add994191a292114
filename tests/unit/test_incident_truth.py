"""The incident ground truth without a server: crafted counter windows are judged at the rules' thresholds
(tests/incident_rules.py, docs/rules.md), and every recorded fixture in tests/data/incidents/ gives back its verdicts
from its own samples, names its incident (the healthy one: none) and is a run directory ``report`` reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import incident_loads as il
import incidents
from record_incidents import DROPPED
from pmuprof.model.rundir import load_run_dir

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "incidents" / "mariadb1011"
MAX_FIXTURE_BYTES = 2_000_000
CASES = sorted(p for p in FIXTURES.glob("*") if (p / "truth.json").is_file())
MARIADB_1011 = {"version": "10.11.19-MariaDB", "query_cache_type": "OFF", "query_cache_size": "1048576"}


def window(
    rates: dict[str, float], levels: dict[str, list[int]] | None = None, seconds: int = 6
) -> list[incidents.Sample]:
    """Samples one second apart whose counters grow at ``rates`` and whose gauges read ``levels`` in turn."""
    levels = levels or {}
    out = []
    for i in range(seconds + 1):
        status = {name: round(rate * i) for name, rate in rates.items()}
        status.update({name: values[i % len(values)] for name, values in levels.items()})
        alter = status.pop("alter", 0)
        out.append(incidents.Sample(float(i), status, alter, status.pop("mdl", 0)))
    return out


OLD_RR = {"age_s": 30, "isolation": "REPEATABLE READ", "state": "RUNNING", "thread": 9}
YOUNG = {**OLD_RR, "age_s": 2}  # began inside the 6-second window: not what holds purge back
CASES_CRAFTED = [
    # kind, rates/s, gauges, variables beyond MariaDB 10.11's defaults, oldest transaction, verdict
    (
        "purge_lag",
        {"Com_update": 400},
        {"history_length": [100, 500, 900, 1300, 1700, 2100, 2500]},
        {},
        OLD_RR,
        "confirmed",
    ),
    (
        "purge_lag",
        {"Com_update": 4000},
        {"history_length": [100, 500, 900, 1300, 1700, 2100, 2500]},
        {},
        OLD_RR,
        "neither",
    ),
    ("purge_lag", {"Com_update": 400}, {"history_length": [100, 500, 900, 1300, 1700, 2100, 2500]}, {}, {}, "neither"),
    (
        "purge_lag",
        {"Com_update": 400},
        {"history_length": [100, 500, 900, 1300, 1700, 2100, 2500]},
        {},
        YOUNG,
        "neither",
    ),
    ("purge_lag", {"Com_update": 400}, {"history_length": [2500, 2000, 1500, 900, 500, 100, 0]}, {}, OLD_RR, "refuted"),
    ("online_ddl", {"Com_alter_table": 0.5}, {"alter": [1, 1, 1, 0]}, {}, {}, "confirmed"),
    ("online_ddl", {"Com_alter_table": 0.5}, {"alter": [1, 0, 0, 0]}, {}, {}, "neither"),
    ("online_ddl", {}, {}, {}, {}, "refuted"),
    (
        "table_cache",
        {"Table_open_cache_misses": 900, "Table_open_cache_hits": 100, "Table_open_cache_overflows": 900},
        {},
        {},
        {},
        "confirmed",
    ),
    (
        "table_cache",
        {"Table_open_cache_misses": 40, "Table_open_cache_hits": 10, "Table_open_cache_overflows": 40},
        {},
        {},
        {},
        "neither",
    ),
    # reopened after an ALTER: misses, but the cache had room (no eviction)
    ("table_cache", {"Table_open_cache_misses": 900, "Table_open_cache_hits": 100}, {}, {}, {}, "refuted"),
    ("table_cache", {"Table_open_cache_misses": 0.5, "Table_open_cache_hits": 9000}, {}, {}, {}, "refuted"),
    ("table_cache", {"Opened_tables": 900}, {"Open_tables": [10]}, {"table_open_cache": "10"}, {}, "confirmed"),
    ("table_cache", {"Opened_tables": 900}, {"Open_tables": [40]}, {"table_open_cache": "2000"}, {}, "neither"),
    ("tmp_disk", {"Created_tmp_disk_tables": 2, "Created_tmp_tables": 4}, {}, {}, {}, "confirmed"),
    ("tmp_disk", {"Created_tmp_disk_tables": 2, "Created_tmp_tables": 100}, {}, {}, {}, "neither"),
    ("tmp_disk", {"Created_tmp_tables": 100}, {}, {}, {}, "refuted"),
    ("sort_merge", {"Sort_merge_passes": 5, "Sort_range": 10}, {}, {}, {}, "confirmed"),
    ("sort_merge", {"Sort_merge_passes": 5, "Sort_range": 100}, {}, {}, {}, "neither"),
    ("sort_merge", {"Sort_range": 100}, {}, {}, {}, "refuted"),
    (
        "query_cache",
        {"Com_select": 1000, "Com_update": 200, "Qcache_hits": 10},
        {},
        {"query_cache_type": "ON"},
        {},
        "confirmed",
    ),
    ("query_cache", {"Com_select": 1000, "Com_update": 200, "Qcache_hits": 10}, {}, {}, {}, "refuted"),
    (
        "query_cache",
        {"Com_select": 1000, "Com_update": 20, "Qcache_hits": 600},
        {},
        {"query_cache_type": "ON"},
        {},
        "refuted",
    ),
    (
        "query_cache",
        {"Com_select": 1000, "Com_update": 20, "Qcache_hits": 10},
        {},
        {"query_cache_type": "ON"},
        {},
        "neither",
    ),
    ("connection_churn", {"Connections": 25}, {}, {}, {}, "confirmed"),
    ("connection_churn", {"Connections": 5}, {}, {}, {}, "neither"),
    ("connection_churn", {"Connections": 0.2}, {}, {}, {}, "refuted"),
    ("tls_handshakes", {"Connections": 3, "Ssl_accepts": 3}, {}, {}, {}, "confirmed"),
    ("tls_handshakes", {"Connections": 30, "Ssl_accepts": 3}, {}, {}, {}, "neither"),
    ("tls_handshakes", {"Connections": 30}, {}, {}, {}, "refuted"),
    ("hot_rows", {}, {"Innodb_row_lock_current_waits": [3, 4, 2, 0]}, {}, {}, "confirmed"),
    ("hot_rows", {"Innodb_row_lock_time": 800}, {}, {}, {}, "confirmed"),
    ("hot_rows", {"Innodb_row_lock_time": 50}, {"Innodb_row_lock_current_waits": [1, 0]}, {}, {}, "neither"),
    ("hot_rows", {}, {"Innodb_row_lock_current_waits": [0]}, {}, {}, "refuted"),
]


@pytest.mark.parametrize(
    "kind, rates, levels, variables, oldest, state", CASES_CRAFTED, ids=[f"{c[0]}-{c[-1]}" for c in CASES_CRAFTED]
)
def test_a_crafted_window_is_judged_at_the_thresholds(kind, rates, levels, variables, oldest, state) -> None:
    truth = incidents.judge(window(rates, levels), {**MARIADB_1011, **variables}, oldest)
    assert truth.verdicts[kind].state == state, truth.verdicts[kind].why


def test_a_window_needs_two_samples() -> None:
    with pytest.raises(ValueError, match="two"):
        incidents.judge(window({}, seconds=0), MARIADB_1011)


def test_every_kind_has_a_recorded_fixture() -> None:
    assert [p.name for p in CASES] == sorted(il.KINDS), (
        f"record them: sudo python3 tests/record_incidents.py ({FIXTURES})"
    )


def _states(truth: dict) -> dict[str, str]:
    return {kind: verdict["state"] for kind, verdict in truth["verdicts"].items()}


@pytest.mark.parametrize("case", CASES, ids=[p.name for p in CASES])
def test_a_fixture_names_its_incident_from_its_own_counters(case: Path) -> None:
    truth = json.loads((case / "truth.json").read_text())
    for name in ("before_capture", "after_capture"):
        told = truth[name]
        again = incidents.judge(
            incidents.samples_from_json(told["window"]), told["variables"], told["derived"]["oldest_trx"]
        )
        assert {k: v.state for k, v in again.verdicts.items()} == _states(told), name
    assert truth["expected"] == list(il.EXPECTED[case.name])
    for name in ("before_capture", "after_capture"):
        states = _states(truth[name])
        assert all(states[kind] == "confirmed" for kind in truth["expected"]), (name, truth[name]["verdicts"])
        if not truth["expected"]:
            assert set(states.values()) == {"refuted"}, (name, truth[name]["verdicts"])


@pytest.mark.parametrize("case", CASES, ids=[p.name for p in CASES])
def test_a_fixture_is_a_small_run_directory_of_debian_1011(case: Path) -> None:
    files = {p.name: p.stat().st_size for p in case.iterdir()}
    assert sum(files.values()) < MAX_FIXTURE_BYTES, files
    assert not set(DROPPED) & set(files), "trimmed: report rebuilds from stacks.folded and the facts"
    profile = load_run_dir(case)
    assert profile.stacks.total > 0 and profile.offcpu is not None
    assert profile.server is not None and profile.server.reachable, profile.server
    assert profile.server.server.version.startswith("10.11."), profile.server.server

"""Structure checks for the knowledge tables rules/knowledge/{latches,server-features}.yaml."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from collections.abc import Iterator

import pytest
import yaml

from pmuprof.findings.kinds import kind_of
from pmuprof.findings.knowledge import server_features
from pmuprof.findings.patterns import PatternSet
from pmuprof.findings.versions import in_range, parse_spec

RULES_DIR = Path(__file__).resolve().parents[2] / "rules"
KNOWLEDGE = RULES_DIR / "knowledge"
FAMILIES = {"mysql", "percona", "mariadb"}
WAIT_KINDS = {"spin", "os_wait", "futex", "kernel_spin", "yield"}
LATCH_TYPES = {
    "mutex",
    "rw-lock",
    "srw",
    "ssux",
    "sux",
    "sharded-rw",
    "pthread-mutex",
    "prlock",
    "pthread-rwlock",
    "sync-array",
}
MODES = {"S", "X", "SX", "U"}


def _load(name: str) -> dict[str, Any]:
    return yaml.safe_load((KNOWLEDGE / name).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def latches() -> dict[str, Any]:
    return _load("latches.yaml")


@pytest.fixture(scope="module")
def features() -> dict[str, Any]:
    return _load("server-features.yaml")


@pytest.fixture(scope="module")
def rule_ids() -> set[str]:
    return {yaml.safe_load(p.read_text(encoding="utf-8"))["id"] for p in RULES_DIR.glob("*.yaml")}


def _specs(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _check_servers(servers: Any, where: str) -> None:
    assert isinstance(servers, dict) and servers, f"{where}: servers must be a non-empty mapping"
    for family, value in servers.items():
        assert family in FAMILIES, f"{where}: unknown family {family!r}"
        for spec in _specs(value):
            parse_spec(spec)  # raises ValueError on a bad term


def _check_evidence(row: dict[str, Any], where: str, sources: dict[str, str]) -> None:
    verified = row.get("verified") or []
    unverified = str(row.get("unverified") or "").strip()
    assert verified or unverified, f"{where}: needs 'verified' or 'unverified'"
    for entry in verified:
        assert any(entry.startswith(label) for label in sources), f"{where}: {entry[:60]!r} names no source label"


def _family_lists(row: dict[str, Any], key: str) -> Iterator[dict[str, Any]]:
    """The [{family: range, value: ...}] lists (default, range, values, dynamic)."""
    value = row.get(key)
    if isinstance(value, list):
        yield from value


def test_wait_frames(latches: dict[str, Any]) -> None:
    for i, row in enumerate(latches["wait_frames"]):
        where = f"wait_frames[{i}] {row.get('pattern')}"
        assert row["kind"] in WAIT_KINDS, where
        PatternSet.of([row["pattern"]])
        _check_servers(row["servers"], where)
        _check_evidence(row, where, latches["sources"])


def test_machinery(latches: dict[str, Any]) -> None:
    ids = {latch["id"] for latch in latches["latches"]}
    for i, row in enumerate(latches["machinery"]):
        where = f"machinery[{i}] {row.get('pattern')}"
        assert row["latch_type"] in LATCH_TYPES, where
        assert set(row.get("inside") or ()) <= LATCH_TYPES, where
        assert row.get("mode") in MODES | {None}, where
        assert row.get("leaf_kind") in WAIT_KINDS | {None}, where
        assert row.get("latch") in ids | {None}, f"{where}: unknown latch {row.get('latch')!r}"
        PatternSet.of([row["pattern"]])
        _check_servers(row["servers"], where)
        _check_evidence(row, where, latches["sources"])


def test_latches(latches: dict[str, Any], rule_ids: set[str]) -> None:
    ids = [latch["id"] for latch in latches["latches"]]
    assert len(ids) == len(set(ids)), "latch ids must be unique"
    for latch in latches["latches"]:
        assert latch["name"] and latch["scope"] in ("innodb", "server"), latch["id"]
        assert latch.get("rule") in rule_ids | {None}, f"{latch['id']}: unknown rule {latch.get('rule')!r}"
        assert latch["mappings"], f"{latch['id']}: no mappings"
        for j, mapping in enumerate(latch["mappings"]):
            where = f"{latch['id']}.mappings[{j}]"
            assert mapping["type"] in LATCH_TYPES, where
            assert mapping.get("acquirers") or mapping.get("no_acquirers_reason"), (
                f"{where}: no acquirers and no reason"
            )
            for acq in mapping.get("acquirers") or []:
                PatternSet.of([acq["pattern"]])
                assert acq.get("mode") in MODES | {None}, where
            _check_servers(mapping["servers"], where)
            _check_evidence(mapping, where, latches["sources"])


def test_a_latch_names_a_rule_that_matches_it(latches: dict[str, Any]) -> None:
    """The report's 'rule that covers it' column: when rules match a latch anywhere (no 'inside'
    condition), the table names one of them."""
    from pmuprof.findings.loader import load_rules

    matching: dict[str, set[str]] = {}
    for rule in load_rules():
        for matcher in rule.evidence:
            anywhere = matcher.kind == "latch" and "inside" not in matcher.spec
            for latch in matcher.spec["latches"] if anywhere else ():
                matching.setdefault(latch, set()).add(rule.id)
    for latch in latches["latches"]:
        if matching.get(latch["id"]):
            assert latch.get("rule") in matching[latch["id"]], (
                f"{latch['id']}: rule {latch.get('rule')!r}, but these rules match it: {sorted(matching[latch['id']])}"
            )


def test_feature_entries(features: dict[str, Any], rule_ids: set[str]) -> None:
    sections = ("variables", "schemas", "statements", "status_variables")
    for section in sections:
        for name, row in features[section].items():
            where = f"{section}.{name}"
            _check_servers(row["exists"], where)
            for key in ("effective", "columns"):
                for sub in [row[key]] if key == "effective" and key in row else (row.get(key) or {}).values():
                    _check_servers(sub, f"{where}.{key}")
            for key in ("default", "range", "values", "dynamic"):
                for item in _family_lists(row, key):
                    _check_servers({k: v for k, v in item.items() if k != "value"}, f"{where}.{key}")
            unknown = set(row.get("used_by") or []) - rule_ids
            assert not unknown, f"{where}: used_by names unknown rules {sorted(unknown)}"
            _check_evidence(row, where, features["sources"])


_SET_VAR = re.compile(r"SET\s+(?:GLOBAL|PERSIST|SESSION)\s+([a-z_]+)\s*=|,\s*([a-z_]+)\s*=\s*\S")
_CNF_VAR = re.compile(r"^\s*(?:loose-)?([a-z][a-z_]+)\s*=\s*[A-Za-z0-9'\"]", re.M)


def _fix_variables(rule: dict[str, Any]) -> set[str]:
    """Server variables a rule's fix steps set (SET statements of sql steps, lines of my.cnf steps)."""
    names: set[str] = set()
    for fix in rule.get("fix") or []:
        steps = fix.get("steps") or []
        sql = "\n".join(s["sql"] for s in steps if "sql" in s)
        text = "\n".join(s["my.cnf"] for s in steps if "my.cnf" in s)
        for line in sql.splitlines():
            if re.search(r"\bSET\s+(GLOBAL|PERSIST|SESSION)\b", line):
                names.update(n for pair in _SET_VAR.findall(line) for n in pair if n)
        names.update(
            n for n in _CNF_VAR.findall(text) if n.startswith(("innodb_", "table_", "binlog_", "thread_", "sync_"))
        )
    return names


def test_every_fix_variable_is_tabled(features: dict[str, Any]) -> None:
    missing = []
    for path in sorted(RULES_DIR.glob("*.yaml")):
        rule = yaml.safe_load(path.read_text(encoding="utf-8"))
        for name in sorted(_fix_variables(rule)):
            row = features["variables"].get(name)
            if row is None or rule["id"] not in (row.get("used_by") or []):
                missing.append(f"{rule['id']}: {name}")
    assert not missing, "fix variables missing from server-features.yaml (or its used_by): " + ", ".join(missing)


@pytest.mark.parametrize(
    "frame, section, expected",
    [
        ("ut_delay(unsigned long)", "wait_frames", ("kind", "spin")),
        ("native_queued_spin_lock_slowpath_[k]", "wait_frames", ("kind", "kernel_spin")),
        ("__lll_lock_wait", "wait_frames", ("kind", "futex")),
        ("sync_array_wait_event(sync_array_t*, sync_cell_t*&)", "wait_frames", ("kind", "os_wait")),
        (
            "PolicyMutex<TTASEventMutex<GenericPolicy> >::enter(unsigned int, unsigned int, char const*, unsigned int)",
            "machinery",
            ("latch_type", "mutex"),
        ),
        ("rw_lock_s_lock_spin(rw_lock_t*, unsigned long, char const*, unsigned long)", "machinery", ("mode", "S")),
        ("rw_lock_sx_lock_func(rw_lock_t*, unsigned long, char const*, unsigned long)", "machinery", ("mode", "SX")),
        ("srw_mutex_impl<true>::wait_and_lock()", "machinery", ("leaf_kind", "spin")),
        ("ssux_lock_impl<true>::wr_wait(unsigned int)", "machinery", ("mode", "X")),
        ("lock_sys_t::rd_lock(char const*, unsigned int)", "machinery", ("latch", "lock_sys_latch_mariadb")),
    ],
)
def test_real_frames_classify(latches: dict[str, Any], frame: str, section: str, expected: tuple[str, str]) -> None:
    """The first row whose pattern matches a perf-printed frame carries the expected attribute."""
    row = next((r for r in latches[section] if PatternSet.of([r["pattern"]]).matches(frame)), None)
    assert row is not None, f"no {section} row matches {frame!r}"
    key, value = expected
    assert row.get(key) == value, f"{frame!r} -> {row['pattern']!r} has {key}={row.get(key)!r}"


def _latch_for(latches: dict[str, Any], frame: str, family: str, version: tuple[int, ...]) -> str | None:
    for latch in latches["latches"]:
        for mapping in latch["mappings"]:
            specs = mapping["servers"].get(family)
            if specs is None or not any(in_range(version, s) for s in _specs(specs)):
                continue
            if PatternSet.of([a["pattern"] for a in mapping["acquirers"]]).matches(frame):
                return latch["id"]
    return None


def test_acquirers_are_version_scoped(latches: dict[str, Any]) -> None:
    dive = "btr_estimate_n_rows_in_range_on_level(dict_index_t*, btr_path_t*, btr_path_t*, ...)"
    assert _latch_for(latches, "fil_space_get(unsigned long)", "mysql", (5, 7, 32)) == "fil_system_mutex"
    assert _latch_for(latches, "fil_space_get(unsigned int)", "mysql", (8, 0, 39)) == "fil_system_mutex"
    assert _latch_for(latches, dive, "mariadb", (10, 11, 6)) is None
    assert _latch_for(latches, "mtr_t::Command::prepare_write()", "mysql", (8, 0, 30)) is None
    assert (
        _latch_for(latches, "lock_rec_lock(bool, select_mode, unsigned long, ...)", "mysql", (8, 0, 39))
        == "lock_sys_latch_8021"
    )
    assert (
        _latch_for(latches, "lock_rec_lock(bool, select_mode, unsigned long, ...)", "mariadb", (10, 5, 23))
        == "lock_sys_mutex"
    )


def _exists(row: dict[str, Any], family: str, version: tuple[int, ...]) -> bool:
    specs = row["exists"].get(family)
    return specs is not None and any(in_range(version, s) for s in _specs(specs))


def test_known_traps(features: dict[str, Any]) -> None:
    variables, schemas = features["variables"], features["schemas"]
    assert not _exists(variables["eq_range_index_dive_limit"], "mariadb", (10, 2, 11))
    assert _exists(variables["eq_range_index_dive_limit"], "mariadb", (10, 2, 18))
    assert not _exists(variables["eq_range_index_dive_limit"], "mariadb", (10, 3, 9))
    assert not _exists(variables["innodb_spin_wait_pause_multiplier"], "mysql", (8, 0, 15))
    assert _exists(variables["innodb_spin_wait_pause_multiplier"], "mysql", (8, 0, 16))
    assert not _exists(variables["binlog_group_commit_sync_delay"], "mariadb", (10, 11, 6))
    assert not _exists(schemas["sys"], "mariadb", (10, 5, 23)) and _exists(schemas["sys"], "mariadb", (10, 6, 0))
    assert not _exists(variables["innodb_log_spin_wait_delay"], "mariadb", (11, 0, 2))


def test_a_rule_counts_every_latch_that_names_it(latches: dict[str, Any]) -> None:
    """An "A or B" wait whose latches all name one rule is that rule's, and only a wait over latches of
    several rules is ambiguous (findings/latches.py ``unclaimed``): so a rule that counts latches anywhere
    must count every latch whose `rule` is it, or such a wait would count nowhere."""
    from pmuprof.findings.loader import load_rules

    for rule in load_rules():
        counted = [
            set(m.spec["latches"])
            for m in rule.evidence
            if m.kind == "latch" and not m.spec.get("ambiguous") and not {"inside", "modes"} & set(m.spec)
        ]
        if not counted:
            continue
        named = {latch["id"] for latch in latches["latches"] if latch.get("rule") == rule.id}
        assert any(named <= ids for ids in counted), f"{rule.id}: counts {counted}, but {sorted(named)} name it"


def test_every_counter_a_rule_reads_names_the_rule(rules) -> None:
    """A status variable a rule's `window` evidence reads lists that rule in its used_by (the table says who
    depends on each verified counter, as it does for the variables of fixes)."""
    table = server_features()
    lacking = []
    for rule in rules:
        for m in rule.evidence:
            for name in getattr(kind_of(m.kind), "counters", lambda _spec: ())(m.spec):
                if rule.id not in table[name].used_by:
                    lacking.append(f"{name}: used_by lacks {rule.id}")
    assert not lacking, "\n".join(lacking)

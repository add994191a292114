"""Every SQL / my.cnf line a rule emits exists in every server version it is emitted for.

The versions come from rules/knowledge/server-features.yaml (checked against the servers' sources);
a fix item is emitted for the versions its `when` (and the rule's applies_to) covers; a next step
without `when` must name the versions it needs, e.g. "(MySQL 5.7.7+ / MariaDB 10.6+)".
"""

from __future__ import annotations

import re

import pytest

from pmuprof.findings.fixcheck import absent, features_used
from pmuprof.findings.steps import FixStep
from pmuprof.findings.knowledge import server_features
from pmuprof.findings.versions import in_range

from .conftest import RULES_DIR
from pmuprof.findings.loader import load_rules

# Versions a rule can meet: release boundaries that matter to the table, and common releases.
VERSIONS = {
    "mysql": [
        (5, 6, 51),
        (5, 7, 6),
        (5, 7, 7),
        (5, 7, 13),
        (5, 7, 44),
        (8, 0, 11),
        (8, 0, 16),
        (8, 0, 21),
        (8, 0, 22),
        (8, 0, 39),
        (8, 4, 3),
    ],
    "percona": [(5, 7, 44), (8, 0, 39)],
    "mariadb": [
        (10, 1, 48),
        (10, 2, 11),
        (10, 2, 18),
        (10, 3, 5),
        (10, 3, 9),
        (10, 3, 17),
        (10, 4, 6),
        (10, 4, 7),
        (10, 5, 4),
        (10, 5, 23),
        (10, 6, 0),
        (10, 11, 7),
        (10, 11, 8),
        (10, 11, 12),
        (11, 4, 5),
        (11, 4, 6),
    ],
}
_LABELLED = re.compile(r"\((?:MySQL|MariaDB|Percona)[^)]*\d\+?[^)]*\)")
RULES = load_rules(RULES_DIR)


def _emitted_for(rule, when) -> list[tuple[str, tuple[int, ...]]]:
    out = []
    for family, versions in VERSIONS.items():
        for version in versions:
            applies = rule.servers is None or in_range(
                version, rule.servers.get(family) or (rule.servers.get("mysql") if family == "percona" else None) or "0"
            )
            spec = None if when is None else (when.get(family) or (when.get("mysql") if family == "percona" else None))
            if applies and (when is None or (spec is not None and in_range(version, spec))):
                out.append((family, version))
    return out


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_fix_lines_exist_where_they_are_emitted(rule) -> None:
    wrong = []
    for item in rule.fix:
        for family, version in _emitted_for(rule, item.when):
            missing = absent(item.steps, family, version)
            if missing:
                wrong.append(
                    f"fix '{item.label or item.steps[0].text[:40]}' on {family} {'.'.join(map(str, version))}: "
                    f"{', '.join(missing)}"
                )
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_next_steps_name_the_versions_they_need(rule) -> None:
    wrong = []
    for step in rule.next_steps:
        limited = {name for family, version in _emitted_for(rule, None) for name in absent(step, family, version)}
        if limited and not _LABELLED.search(step):
            wrong.append(f"{step[:70]}: needs {', '.join(sorted(limited))} but says no version")
    assert not wrong, "\n".join(wrong)


def test_the_checker_reads_sql_steps_as_sql_and_mycnf_steps_as_options() -> None:
    steps = (
        FixStep(
            "sql",
            "SET GLOBAL innodb_spin_wait_delay = 6, innodb_sync_spin_loops = 30;\n"
            "SELECT * FROM sys.schema_table_lock_waits;  -- innodb_fill_factor = 90 in a comment",
        ),
        FixStep("my.cnf", "[mysqld]\ninnodb_purge_threads = 1  # default 4\nloose-innodb_numa_interleave = ON"),
        FixStep("note", "Or SET GLOBAL innodb_lru_scan_depth = 2048; the prose is not server input."),
        FixStep("shell", "innodb_io_capacity = 2000"),
    )
    assert features_used(steps) == {
        "innodb_spin_wait_delay",
        "innodb_sync_spin_loops",
        "innodb_purge_threads",
        "sys.schema_table_lock_waits",
    }
    # a sql step is not read as my.cnf, nor a my.cnf step as SQL
    assert features_used([FixStep("sql", "SELECT 1;\ninnodb_purge_threads = 1")]) == set()
    assert absent([FixStep("my.cnf", "[mysqld]\ninnodb_purge_threads = 1")], "mariadb", (10, 2, 11)) == []
    assert absent("SET GLOBAL eq_range_index_dive_limit = 10;", "mariadb", (10, 2, 11)) == ["eq_range_index_dive_limit"]
    assert absent("SET GLOBAL eq_range_index_dive_limit = 10;", "mariadb", (10, 2, 18)) == []
    assert "eq_range_index_dive_limit" in server_features()

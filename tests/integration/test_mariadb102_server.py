"""The MariaDB 10.2.11 fixture: the server it starts is the one the rules must be right about."""

from __future__ import annotations

from pathlib import Path

from pmuprof.tools.elf import ElfFile, symbol_summary
from tests import mariadb as mdb


def test_it_is_10_2_11_with_symbols_and_frame_pointers(mariadb102):
    assert mdb.sql(mariadb102, "SELECT VERSION()")[0][0] == "10.2.11-MariaDB"
    exe = Path(f"/proc/{mariadb102.pid}/exe").resolve()
    summary = symbol_summary(exe)
    assert summary["symtab"] > 20000 and summary["frame_pointers"] == "likely", summary
    assert ElfFile(exe).find("_Z8ut_delaym") is not None, "ut_delay is a real function in 10.2 (inlined from 10.5)"


def test_server_facts_the_fixes_depend_on(mariadb102):
    """What 10.2.11 has and lacks: fix texts that name a missing variable or schema fail on it."""
    variables = dict(mdb.sql(mariadb102, "SHOW GLOBAL VARIABLES"))
    assert variables["innodb_spin_wait_delay"] == "6" and variables["innodb_sync_spin_loops"] == "30"
    assert "eq_range_index_dive_limit" not in variables and "innodb_log_spin_wait_delay" not in variables
    assert variables["innodb_adaptive_hash_index"] == "ON" and variables["performance_schema"] == "OFF"
    assert "sys" not in {row[0] for row in mdb.sql(mariadb102, "SHOW DATABASES")}


def test_index_dive_load_runs_and_its_plan_dives_every_index(mariadb102):
    load = mdb.SysbenchLoad(
        mariadb102, 4, str(mdb.INDEX_DIVE_LUA), threads=4, script_args=("--range-width=0", "--ranges=50")
    )
    try:
        result = load.wait()
    finally:
        load.stop()
    assert result.tps > 0 and result.errors == 0
    plan = mdb.sql(mariadb102, "EXPLAIN SELECT COUNT(*) FROM sbtest.dive1 WHERE id < 0 AND a IN (1,2,3) AND b IN (4,5)")
    assert plan[0][5] == "PRIMARY" and {"ka", "kb"} <= set(plan[0][4].split(",")), plan

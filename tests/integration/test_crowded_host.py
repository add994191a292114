"""Right on a crowded host (issue 32): a host saturated on purpose, and two servers in one system-wide recording.

1. CPU hogs beside a write load on a private MariaDB: the off-CPU time splits into blocked and waiting for a
   CPU (off-cpu:W), the verdict names the saturation and who used the CPUs, and no fix that trades durability
   leads. The hogs are killed in teardown, always.
2. Debian's MariaDB 10.11 and MariaDB 11.4.5 under `perf record -a`, one of them hot (16 writers spinning at
   innodb_spin_wait_delay = 200), the other nearly idle: each process gets its own findings (nothing copied
   between them), its version from its own binary, and the verdict names the hot one.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from helpers import Hogs, capture_under, need_perf, run_cli
import mariadb as mdb
from pmuprof.capture.offcpu.tracer import unavailable

DURABILITY = ("innodb_flush_log_at_trx_commit = 2", "sync_binlog = 0", "innodb_doublewrite = 0")


@pytest.fixture
def hogs():
    """Three busy shells per CPU spinning; always killed in teardown."""
    hogs = Hogs(3)
    try:
        yield hogs
    finally:
        hogs.stop()


def test_a_saturated_host_explains_itself(mariadb, hogs, tmp_path):
    need_perf()
    why, _ = unavailable([mariadb.pid])
    if why:
        pytest.skip(f"off-CPU tracing: {why}")
    load = mdb.SysbenchLoad(mariadb, 60, "oltp_write_only", 8)
    try:
        load.connected()  # past sysbench's connect: the capture sees the commits
        out = tmp_path / "run"
        # the hogs and the load stop once the recording has ended: the report reads the run directory only, and
        # on a host saturated on purpose it took most of this test's time, with eight processes beside it
        res = capture_under(
            [load, hogs], out, "-p", str(mariadb.pid), "-d", "6", "--defaults-file", str(mariadb.defaults_file),
            timeout=600,
        )  # fmt: skip
    finally:
        load.stop()
    assert res.returncode in (0, 1), res.stderr[-3000:]
    run = json.loads((out / "run.json").read_text())
    off = run["offcpu"]
    assert off["recorded"] and off["wakeups"], off
    folded = (out / "offcpu.folded").read_text().splitlines()
    woken = sum(int(x.rsplit(" ", 1)[1]) for x in folded if x.rsplit(" ", 1)[0].endswith(";off-cpu:W"))
    assert woken == off["runnable_us"] > 0
    # with three hogs a CPU, a woken server thread waits for a CPU: a real share of its off-CPU time
    assert off["runnable_us"] > 0.05 * (off["total_us"] - off["before_us"]), off
    users = run["cpu_users"]
    assert users["seconds"] >= 5 and users["targets_share"] > 0, users
    listed = {u["pid"]: u for u in users["processes"]}
    assert listed[mariadb.pid]["target"], listed  # the target is always listed, with its own share
    # the processes /proc saw account for the CPU time /proc/stat says was used (those that ended inside the
    # window are not counted: sysbench's and the other sessions' short-lived commands)
    assert users["counted_share"] >= 0.6 * run["host_load"]["busy_share"], (users, run["host_load"])
    first = users["processes"][0]
    found = json.loads((out / "findings.json").read_text())
    verdict = found["verdict"]
    assert verdict["rule"] == "host-saturated", verdict
    host = next(f for f in found["findings"] if f["rule"] == "host-saturated")
    assert f"the CPUs went to {first['name']} (pid {first['pid']}" in host["message"], host["message"]
    for f in found["findings"]:  # no fix that trades durability leads, on the first screen or anywhere
        lead = (f["fix"] or [{"text": ""}])[0]["text"]
        assert not any(d in lead for d in DURABILITY), (f["rule"], lead)
    md = (out / "report.md").read_text()
    assert "**Verdict: The host is saturated" in md and "the CPUs went to" in md
    print(
        f"runnable {off['runnable_us'] / 1e6:.2f} s of {off['total_us'] / 1e6:.2f} s off-CPU; verdict {verdict['rule']}"
    )


@pytest.fixture(scope="module")
def two_versions(mariadb, mariadb114):
    """Debian's mariadbd (10.11) and MariaDB 11.4.5's, the session's (each with sysbench tables; two servers of
    this module's own cost two installs, two starts and two prepares); the 11.4.5 one spins while the module
    runs."""
    (delay,) = mdb.sql(mariadb114, "SELECT @@innodb_spin_wait_delay")[0]
    mdb.sql(mariadb114, "SET GLOBAL innodb_spin_wait_delay = 200")
    try:
        yield [mariadb, mariadb114]
    finally:
        mdb.sql(mariadb114, f"SET GLOBAL innodb_spin_wait_delay = {int(delay)}")


def test_a_system_wide_recording_of_two_servers(two_versions, tmp_path):
    perf = need_perf()
    debian, hot = two_versions
    loads = [mdb.SysbenchLoad(hot, 60, "oltp_write_only", 16), mdb.SysbenchLoad(debian, 60, "oltp_point_select", 1)]
    try:
        for load in loads:
            load.connected()  # past sysbench's connect on both servers: the recording sees their statements
        data = tmp_path / "perf.data"
        rec = subprocess.run(
            [perf, "record", "-a", "-g", "-F", "799", "-o", str(data), "--", "sleep", "5"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        for load in loads:
            load.stop()
    assert rec.returncode == 0, rec.stderr[-2000:]
    out = tmp_path / "out"
    # the two servers (a shared host runs other mysqld-named processes: the report names them and their --pid)
    res = run_cli("report", str(data), "-o", str(out), "--pid", str(hot.pid), "--pid", str(debian.pid), timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    found = json.loads((out / "findings.json").read_text())
    hot_label, cold_label = f"mariadbd-{hot.pid}", f"mariadbd-{debian.pid}"
    assert {hot_label, cold_label} <= set(found["profile"]["processes"]), found["profile"]
    by_process: dict[str, dict[str, dict]] = {}
    for f in found["findings"]:
        by_process.setdefault(f["process"], {})[f["rule"]] = f
    mine, other = by_process.get(hot_label, {}), by_process.get(cold_label, {})
    assert "innodb-spin-wait" in mine, {p: list(r) for p, r in by_process.items()}
    # nothing copied between the two processes: a rule firing on both has each its own share and evidence
    for rule in set(mine) & set(other):
        assert mine[rule]["share"] != other[rule]["share"] or mine[rule]["evidence"] != other[rule]["evidence"], rule
    verdict = found["verdict"]
    assert verdict["process"] == hot_label and f"pid {hot.pid}" in verdict["who"], verdict
    declined = [w for w in found["profile"]["warnings"] if "pmuprof-perfdata declined" in w]
    if not declined:  # each process's version is its own binary's: 11.4.5 for the hot one, 10.11 for Debian's
        assert mine["innodb-spin-wait"]["evidence"]["server"].startswith("MariaDB 11.4.5"), mine["innodb-spin-wait"]
        assert all(f["evidence"]["server"].startswith("MariaDB 10.11") for f in other.values()), other
        assert "11.4.5" in verdict["who"], verdict
    else:  # read through perf script (a live process in another mount namespace, on a shared host): it says so,
        # and no version is guessed for either (no 10.2-only or 11.4-only rule fires on a guess)
        assert all("(version unknown)" in f["evidence"]["server"] for f in [*mine.values(), *other.values()])
        print(f"perf.data read through perf script: {declined[0]}")
    md = (out / "report.md").read_text()
    assert f"pid {hot.pid}" in md.split("**Verdict:", 1)[1].split("\n\n", 2)[1] or f"pid {hot.pid}" in md

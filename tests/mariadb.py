"""A private MariaDB server (temp datadir, own socket, loopback port) and sysbench load, for tests and benchmarks."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shared import hold_cpus, release_cpus

TOOLS = ("mariadbd", "mariadb-install-db", "sysbench")
SBIN = ("/usr/sbin", "/usr/local/sbin", "/usr/libexec")


def which(tool: str) -> str | None:
    """A tool on PATH or in the sbin folders (mariadbd lives in /usr/sbin)."""
    found = shutil.which(tool)
    if found:
        return found
    return next((str(Path(d) / tool) for d in SBIN if (Path(d) / tool).is_file()), None)


def missing_tools() -> str | None:
    """Why a private server cannot be started here, or None when it can."""
    missing = [t for t in TOOLS if which(t) is None]
    if missing:
        return f"{', '.join(missing)} not installed (apt-get install mariadb-server sysbench)"
    try:
        import pymysql  # noqa: F401
    except ImportError:
        return "PyMySQL not installed (pip install PyMySQL)"
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class MariaDB:
    """A running private server. ``defaults_file`` holds the sysbench user's password ([client])."""

    pid: int
    workdir: Path
    datadir: Path
    socket: Path
    port: int
    error_log: Path
    user: str
    password: str = field(repr=False)
    database: str
    defaults_file: Path

    def sysbench_args(self) -> list[str]:
        return [
            "--db-driver=mysql",
            f"--mysql-socket={self.socket}",
            f"--mysql-user={self.user}",
            f"--mysql-password={self.password}",
            f"--mysql-db={self.database}",
        ]


def _install(workdir: Path, datadir: Path, root_auth: str) -> None:
    argv = [
        which("mariadb-install-db") or "mariadb-install-db",
        "--no-defaults",
        f"--datadir={datadir}",
        f"--auth-root-authentication-method={root_auth}",
        "--skip-test-db",
        "--skip-name-resolve",
        f"--tmpdir={workdir}",  # the bootstrap's temporary tables in the server's own folder, not the host's /tmp
    ]
    if os.geteuid() == 0:
        argv.append("--user=root")
    with open(workdir / "install.log", "wb") as log:
        proc = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, timeout=READY_HANG_S, cwd=workdir)
    if proc.returncode != 0:
        tail = (workdir / "install.log").read_text(errors="replace")[-2000:]
        raise RuntimeError(f"mariadb-install-db failed ({proc.returncode}): {tail}")


def server_argv(
    workdir: Path, datadir: Path, port: int, extra: tuple[str, ...], mysqld: str | None = None
) -> list[str]:
    """The private server's command line (Debian's mariadbd unless ``mysqld`` names another binary)."""
    argv = [
        mysqld or which("mariadbd") or "mariadbd",
        "--no-defaults",
        f"--datadir={datadir}",
        f"--socket={workdir / 'mysqld.sock'}",
        f"--port={port}",
        "--bind-address=127.0.0.1",
        f"--pid-file={workdir / 'mariadbd.pid'}",
        f"--log-error={workdir / 'error.log'}",
        f"--tmpdir={workdir}",
        "--innodb-buffer-pool-size=128M",
        "--innodb-log-file-size=48M",
        "--max-connections=200",
        "--skip-name-resolve",
        "--skip-log-bin",
        *extra,
    ]
    if os.geteuid() == 0:
        argv.insert(2, "--user=root")
    return argv


def _root(server_socket: Path):
    import pymysql

    return pymysql.connect(unix_socket=str(server_socket), user="root", password="", autocommit=True, connect_timeout=2)


READY_HANG_S = 900.0  # a server not answering after this long is hung, whatever the load: the hang detector


def _wait_ready(proc: subprocess.Popen, sock: Path, error_log: Path, timeout: float = READY_HANG_S) -> None:
    """Until the server answers root on its socket (readiness itself); an exit stops the wait at once, and
    ``timeout`` is only a hang detector (a loaded host's InnoDB start can take minutes)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = error_log.read_text(errors="replace")[-2000:] if error_log.exists() else ""
            raise RuntimeError(f"mariadbd exited with {proc.returncode}: {tail}")
        if sock.exists():
            try:
                _root(sock).close()
                return
            except Exception:  # noqa: BLE001 - not ready yet
                pass
        time.sleep(0.2)
    tail = error_log.read_text(errors="replace")[-1500:] if error_log.exists() else "(no error log)"
    raise RuntimeError(
        f"mariadbd (pid {proc.pid}) still running but not answering root on {sock} after {timeout:.0f} s: "
        f"hung? its error log ends: {tail}"
    )


def sql(server: MariaDB, *statements: str) -> list[tuple]:
    """Run statements as root over the private socket; the rows of the last one."""
    conn = _root(server.socket)
    try:
        rows: list[tuple] = []
        with conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
                rows = list(cur.fetchall())
        return rows
    finally:
        conn.close()


def wait_connected(server: MariaDB, n: int, timeout: float = 600.0) -> None:
    """Until the server counts n connections (Threads_connected, this check's own included): a loaded host
    can take seconds to connect every sysbench client (``timeout``: a hang detector)."""
    deadline = time.monotonic() + timeout
    while int(dict(sql(server, "SHOW GLOBAL STATUS LIKE 'Threads_connected'"))["Threads_connected"]) < n:
        assert time.monotonic() < deadline, f"sysbench did not connect {n - 1} clients in {timeout:g} s"
        time.sleep(0.2)


def open_server(proc: subprocess.Popen, workdir: Path, datadir: Path, port: int) -> MariaDB:
    """Wait until the just-started server answers root on ``workdir/mysqld.sock``, then add the sbtest
    user and database (password in ``workdir/client.cnf``); shared by every private-server starter."""
    sock, error_log = workdir / "mysqld.sock", workdir / "error.log"
    _wait_ready(proc, sock, error_log)
    password = "sb-" + secrets.token_hex(8)
    server = MariaDB(
        proc.pid, workdir, datadir, sock, port, error_log, "sbtest", password, "sbtest", workdir / "client.cnf"
    )
    server.defaults_file.write_text(f'[client]\nuser=sbtest\npassword="{password}"\nsocket={sock}\n')
    server.defaults_file.chmod(0o600)
    grants = [f"CREATE USER 'sbtest'@'{h}' IDENTIFIED BY '{password}'" for h in ("localhost", "127.0.0.1")]
    grants += [f"GRANT ALL ON sbtest.* TO 'sbtest'@'{h}'" for h in ("localhost", "127.0.0.1")]
    grants += [f"GRANT PROCESS ON *.* TO 'sbtest'@'{h}'" for h in ("localhost", "127.0.0.1")]
    sql(server, "CREATE DATABASE sbtest", *grants)
    return server


def start_mariadb(extra_args: tuple[str, ...] = (), workdir: Path | None = None, root_auth: str = "normal") -> MariaDB:
    """Install a datadir under a new temp folder and start mariadbd on it; stop_mariadb() undoes all.

    ``root_auth="socket"`` makes root@localhost use unix_socket authentication, as Debian's packages do.
    """
    workdir = Path(workdir or tempfile.mkdtemp(prefix="pmuprof-mdb-"))
    datadir = workdir / "data"
    port = free_port()
    proc = None
    try:
        _install(workdir, datadir, root_auth)
        with open(workdir / "mariadbd.out", "wb") as out:
            proc = subprocess.Popen(
                server_argv(workdir, datadir, port, extra_args),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        return open_server(proc, workdir, datadir, port)
    except BaseException:
        stop_pid(proc.pid if proc else None)
        shutil.rmtree(workdir, ignore_errors=True)
        raise


def stop_pid(pid: int | None, grace: float = 30.0) -> None:
    """SIGTERM, wait up to ``grace`` seconds, then SIGKILL; only the pid we started."""
    if pid is None:
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return
        except ChildProcessError:  # not our child (or already reaped): poll its existence
            if not Path(f"/proc/{pid}").exists():
                return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def stop_mariadb(server: MariaDB) -> None:
    """Stop the server by pid and remove its temp folder (datadir, socket, logs)."""
    try:
        stop_pid(server.pid)
    finally:
        shutil.rmtree(server.workdir, ignore_errors=True)


@dataclass(frozen=True)
class SysbenchResult:
    test: str
    threads: int
    seconds: float
    tps: float
    qps: float
    p95_ms: float
    errors: int


_TPS = re.compile(r"transactions:\s+(\d+)\s+\(([\d.]+) per sec")
_QPS = re.compile(r"queries:\s+(\d+)\s+\(([\d.]+) per sec")
_P95 = re.compile(r"95th percentile:\s+([\d.]+)")
_TIME = re.compile(r"total time:\s+([\d.]+)s")
_ERR = re.compile(r"ignored errors:\s+(\d+)")


def parse_sysbench(text: str, test: str = "", threads: int = 0) -> SysbenchResult:
    """TPS, QPS and p95 latency from sysbench 1.0 ``run`` output; ValueError when absent."""
    tps, qps, p95 = _TPS.search(text), _QPS.search(text), _P95.search(text)
    if not (tps and qps and p95):
        raise ValueError(f"no sysbench summary in output: {text[-500:]!r}")
    took, errors = _TIME.search(text), _ERR.search(text)
    return SysbenchResult(
        test,
        threads,
        float(took.group(1)) if took else 0.0,
        float(tps.group(2)),
        float(qps.group(2)),
        float(p95.group(1)),
        int(errors.group(1)) if errors else 0,
    )


def sysbench_prepare(server: MariaDB, tables: int = 2, table_size: int = 10000) -> None:
    argv = [
        which("sysbench") or "sysbench",
        "oltp_read_write",
        *server.sysbench_args(),
        f"--tables={tables}",
        f"--table-size={table_size}",
        "prepare",
    ]
    subprocess.run(argv, check=True, capture_output=True, timeout=600)


INDEX_DIVE_LUA = Path(__file__).resolve().parent / "loads" / "index_dive.lua"


def index_dive_prepare(server: MariaDB, table_size: int = 200000) -> None:
    """Create and fill table dive1 for INDEX_DIVE_LUA (five secondary indexes, uniform values)."""
    argv = [
        which("sysbench") or "sysbench",
        str(INDEX_DIVE_LUA),
        *server.sysbench_args(),
        f"--table-size={table_size}",
        "prepare",
    ]
    subprocess.run(argv, check=True, capture_output=True, timeout=600)


def sysbench_run_argv(
    server: MariaDB,
    seconds: float,
    test: str = "oltp_read_write",
    threads: int = 4,
    *,
    tables: int = 2,
    table_size: int = 10000,
    script_args: tuple[str, ...] | None = None,
    rate: int = 0,
) -> list[str]:
    """The ``sysbench ... run`` command line of SysbenchLoad (its arguments), for a caller that runs it itself."""
    sizes = (f"--tables={tables}", f"--table-size={table_size}") if script_args is None else script_args
    return [
        which("sysbench") or "sysbench",
        test,
        *server.sysbench_args(),
        *sizes,
        f"--threads={threads}",
        f"--time={int(seconds)}",
        "--percentile=95",
        "--report-interval=0",
        "--rand-type=uniform",
        *([f"--rate={rate}"] if rate else []),
        "run",
    ]


UNTIL_STOPPED = 3600  # sysbench --time of a load the test stops itself: longer than any capture on a loaded host


class SysbenchLoad:
    """sysbench running in the background for a bounded time (it stops by itself; stop() ends it early).

    ``script_args`` replaces the OLTP scripts' --tables/--table-size for scripts with other options
    (``SysbenchLoad(server, 20, str(INDEX_DIVE_LUA), 16, script_args=("--range-width=0",))``). ``rate``
    paces all threads together to that many transactions a second (sysbench --rate): clients connected and
    working without keeping the CPUs busy, for tests that need connections or statements, not CPU load.
    """

    def __init__(
        self, server: MariaDB, seconds: float, test: str = "oltp_read_write", threads: int = 4, **options: Any
    ) -> None:
        """``options``: sysbench_run_argv's (tables, table_size, script_args, rate)."""
        self.server, self.test, self.threads, self.seconds = server, test, threads, seconds
        self.rate = int(options.get("rate", 0))
        argv = sysbench_run_argv(server, seconds, test, threads, **options)
        self._out = tempfile.TemporaryFile()
        self._holding = not self.rate  # flat out: no other test's flat-out load beside it (shared.hold_cpus)
        if self._holding:
            hold_cpus()
        try:
            self.proc = subprocess.Popen(
                argv, stdout=self._out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        except BaseException:
            self._release()
            raise

    def _release(self) -> None:
        if self._holding:
            self._holding = False
            release_cpus()

    def connected(self, others: int = 0) -> SysbenchLoad:
        """This load, once its clients are connected (and ``others`` connections of other loads): a capture
        started before then records the clients connecting, not the load."""
        try:
            wait_connected(self.server, self.threads + others + 1)
        except BaseException:
            self.stop()  # a caller that never got the load cannot stop it (nor release its hold_cpus)
            raise
        return self

    def wait(self, timeout: float | None = None) -> SysbenchResult:
        """Wait for the run to end and return its numbers (``timeout``, a hang detector: its time + 10 min)."""
        self.proc.wait(timeout=timeout if timeout is not None else self.seconds + 600)
        self._release()
        self._out.seek(0)
        return parse_sysbench(self._out.read().decode(errors="replace"), self.test, self.threads)

    def pause(self) -> None:
        """Hold the clients where they are (SIGSTOP to sysbench): connected, nothing sent, no CPU spent, the
        server idle with them (helpers.capture_under, while pmuprof starts). A paced load (``rate``) is left
        running: sysbench would send what it owes in a burst when it resumes."""
        if not self.rate and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        """The clients carry on from where pause() held them, on the connections they had."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)

    def stop(self) -> None:
        try:
            if self.proc.poll() is None:
                self.resume()  # a held sysbench would sit on SIGTERM until SIGKILL
                stop_pid(self.proc.pid, grace=5.0)
        finally:
            self._release()
            self._out.close()


def run_sysbench(
    server: MariaDB, seconds: float, test: str = "oltp_read_write", threads: int = 4, **options: Any
) -> SysbenchResult:
    """A SysbenchLoad run to its end: its numbers (``options``: sysbench_run_argv's)."""
    load = SysbenchLoad(server, seconds, test, threads, **options)
    try:
        return load.wait()
    finally:
        load.stop()

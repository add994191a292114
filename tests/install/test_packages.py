"""The production install paths in fresh Debian 12 roots, every command as the docs write it: a build host makes
the wheel, the sdist and the .deb; a database host with only the README's runtime packages installs the wheel
(pipx, then a venv); another installs the .deb. Each install is followed by `doctor` and a real capture.

The tests run in file order and hand their artifacts on (run this module on one worker: pytest-xdist
`--dist loadfile`); a later test skips, naming the earlier one, when an artifact it needs was not made."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pmuprof import __version__

from .cleanroot import CleanRoot, doctor_and_capture
from .doccmds import REPO, block

pytestmark = pytest.mark.cleanroot
CLONE = "/root/pmuprof"
WHEEL = f"pmuprof-{__version__}-py3-none-linux_x86_64.whl"
SDIST = f"pmuprof-{__version__}.tar.gz"
DEB = f"pmuprof_{__version__}_amd64.deb"
README_PROD = "Production install (a database host)"
WHEEL_DOC = "A database host: the wheel and its runtime libraries"
# What a database host must not get from any install path: a compiler, -dev packages, a server.
BUILD_PREFIXES = ("gcc-", "cpp-", "clang", "llvm", "binutils", "mariadb-server")  # gcc-12-base is libgcc's: in minbase
BUILD_PACKAGES = {"gcc", "cpp", "make", "build-essential", "dpkg-dev", "python3-pip"}  # python3-pip-whl is venv's


def _tail(text: str, n: int = 4000) -> str:
    return text[-n:]


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> dict[str, Path]:
    """Artifacts the build host made, copied out of its root: wheel, sdist, deb."""
    return {"dir": tmp_path_factory.mktemp("artifacts")}


@pytest.fixture(scope="module")
def build_host(tmp_path_factory, checkout):
    base = tmp_path_factory.mktemp("build-host")
    with CleanRoot(base, "root", base / "build-host.log") as root:
        root.copy_tree(checkout, REPO, CLONE)
        assert root.sh("apt-get update -qq").returncode == 0  # current package lists, as on a maintained host
        yield root


def _keep(root: CleanRoot, inside: str, made: dict[str, Path], key: str) -> Path:
    path = root.file(inside)
    assert path.is_file(), f"{inside} was not made"
    made[key] = Path(shutil.copy2(path, made["dir"] / path.name))
    return made[key]


def _need(made: dict[str, Path], key: str, by: str) -> Path:
    if key not in made:
        pytest.skip(f"no {key}: {by} did not make it")
    return made[key]


def _installed(root: CleanRoot) -> set[str]:
    listed = root.sh("dpkg-query -W -f '${Package}\\n'")
    assert listed.returncode == 0, listed.stdout
    return set(listed.stdout.split())


def _no_build_tools(before: set[str], after: set[str]) -> None:
    added = after - before
    bad = sorted(p for p in added if p.endswith("-dev") or p in BUILD_PACKAGES or p.startswith(BUILD_PREFIXES))
    assert not bad, f"a database host got build or server packages: {bad}"


def test_build_host_makes_the_wheel(build_host, made):
    commands = block("README.md", README_PROD, 0)
    assert WHEEL in commands.text  # the name the docs promise is the name the build gives
    done = build_host.sh(commands.script(), cwd=CLONE, timeout=1800)
    assert done.returncode == 0, _tail(done.stdout)
    _keep(build_host, f"{CLONE}/dist/{WHEEL}", made, "wheel")


def test_build_host_makes_the_sdist(build_host, made):
    done = build_host.sh(block("docs/install.md", WHEEL_DOC, 0).script(), cwd=CLONE, timeout=1800)
    assert done.returncode == 0, _tail(done.stdout)
    _keep(build_host, f"{CLONE}/dist/{SDIST}", made, "sdist")


def test_the_sdist_installs_and_captures(build_host, made):
    """The sdist builds the four helpers where it is installed (the build host has their packages)."""
    _need(made, "sdist", "test_build_host_makes_the_sdist")
    done = build_host.sh(block("docs/install.md", WHEEL_DOC, 1).script(), cwd=CLONE, timeout=1800)
    assert done.returncode == 0, _tail(done.stdout)
    doctor_and_capture(build_host, "pmuprof", "sdist", "/opt/pipx/venvs/pmuprof/")


def test_build_host_makes_the_deb(build_host, made):
    done = build_host.sh(block("docs/install.md", "A Debian package", 0).script(), cwd=CLONE, timeout=1800)
    assert done.returncode == 0, _tail(done.stdout)
    _keep(build_host, f"/root/{DEB}", made, "deb")


@pytest.fixture(scope="module")
def database_host(tmp_path_factory, made):
    """A fresh root with the wheel beside root's home, and current package lists; nothing else."""
    wheel = _need(made, "wheel", "test_build_host_makes_the_wheel")
    base = tmp_path_factory.mktemp("database-host")
    with CleanRoot(base, "root", base / "database-host.log") as root:
        shutil.copy2(wheel, root.file(f"/root/{WHEEL}"))
        assert root.sh("apt-get update -qq").returncode == 0
        yield root


def test_database_host_installs_the_wheel(database_host):
    root = database_host
    before = _installed(root)
    done = root.sh(block("README.md", README_PROD, 1).script(), timeout=1800)
    assert done.returncode == 0, _tail(done.stdout)
    _no_build_tools(before, _installed(root))
    man = root.file("/usr/local/share/man/man1/pmuprof.1").read_text()
    assert man == (REPO / "docs" / "pmuprof.1").read_text()  # the generator gives the committed page here too
    completion = root.file("/usr/local/share/bash-completion/completions/pmuprof").read_text()
    assert "_pmuprof_completion()" in completion
    doctor_and_capture(root, "pmuprof", "pipx", "/opt/pipx/venvs/pmuprof/")


def test_database_host_venv_instead_of_pipx(database_host):
    done = database_host.sh(block("README.md", README_PROD, 2).script(), timeout=1800)
    assert done.returncode == 0, _tail(done.stdout)
    doctor_and_capture(database_host, "/opt/pmuprof/bin/pmuprof", "venv", "/opt/pmuprof/lib/")


def test_the_deb_installs_and_captures(tmp_path, made):
    """Only runtime libraries and Debian's python3 packages come in; the man page, completion and the
    nightly units are installed (the timer disabled); a capture works on Debian's click, numpy & co."""
    deb = _need(made, "deb", "test_build_host_makes_the_deb")
    with CleanRoot(tmp_path, "deb-host", tmp_path / "deb-host.log") as root:
        shutil.copy2(deb, root.file(f"/root/{DEB}"))
        assert root.sh("apt-get update -qq").returncode == 0
        before = _installed(root)
        done = root.sh(block("docs/install.md", "A Debian package", 1).script(), timeout=1800)
        assert done.returncode == 0, _tail(done.stdout)
        after = _installed(root)
        _no_build_tools(before, after)
        assert {"python3-click", "python3-numpy", "linux-perf", "libbpf1", "libpfm4"} <= after
        for path in (
            "/usr/share/man/man1/pmuprof.1.gz",
            "/usr/share/bash-completion/completions/pmuprof",
            "/lib/systemd/system/pmuprof-nightly.service",
            "/lib/systemd/system/pmuprof-nightly.timer",
        ):
            assert root.file(path).is_file(), path
        unit = root.file("/lib/systemd/system/pmuprof-nightly.service").read_text()
        assert "exec /usr/bin/pmuprof capture --all-mysqld" in unit and "CAP_BPF" in unit
        assert not root.file("/etc/systemd/system/timers.target.wants/pmuprof-nightly.timer").exists()
        doctor_and_capture(root, "pmuprof", "deb", "/usr/lib/pmuprof/")
        status = root.sh("pmuprof schedule status --json --scheduler cron > /root/status.json")
        assert status.returncode == 0, status.stdout
        assert json.loads(root.file("/root/status.json").read_text())["spec"]["directory"] == "/var/lib/pmuprof"

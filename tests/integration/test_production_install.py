"""The README's production install in a clean venv: the sdist carries and builds every helper (or stops
and says which one it cannot build), the wheel brings only runtime dependencies, its helpers need only
runtime libraries (no -dev package), and `pmuprof doctor` and `capture` work from it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from helpers import REPO, build_busy, need_perf, spawn_named
from shared import after_host_tier
from pmuprof.packages import DATABASE_HOST

HELPERS = ("pmuprof-helper", "pmuprof-fold", "pmuprof-perfdata", "pmuprof-offcpu")
RUNTIME_DISTS = {"pmuprof", "click", "jinja2", "markupsafe", "pyyaml", "pymysql", "numpy"}
BASE_PACKAGES = {"libc6", "zlib1g", "liblzma5", "libbz2-1.0", "libzstd1", "libgcc-s1", "libstdc++6"}  # required ones


def _run(argv, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=kw.pop("timeout", 900), **kw)


def _pip_wheel(source: Path, out: Path, **env: str) -> subprocess.CompletedProcess:
    return _run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(source)],
        env={**os.environ, **env},
    )


@pytest.fixture(scope="module")
def sdist(tmp_path_factory) -> Path:
    """`python -m build --sdist` of this checkout, from a scratch venv that holds `build`."""
    base = tmp_path_factory.mktemp("sdist")
    _run([sys.executable, "-m", "venv", str(base / "venv")])
    got = _run([str(base / "venv" / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", "build"])
    if got.returncode != 0:
        pytest.skip(f"`build` could not be installed (package index unreachable?): {got.stderr.strip()[-200:]}")
    made = _run([str(base / "venv" / "bin" / "python"), "-m", "build", "--sdist", "-o", str(base), str(REPO)])
    assert made.returncode == 0, made.stdout[-2000:] + made.stderr[-2000:]
    return next(base.glob("pmuprof-*.tar.gz"))


@pytest.fixture(scope="module")
def venv(tmp_path_factory, sdist) -> Path:
    """The wheel built from the sdist (as a build host of the README does), installed in a clean venv."""
    base = tmp_path_factory.mktemp("prod")
    wheel_dir = base / "dist"
    built = _pip_wheel(sdist, wheel_dir)
    assert built.returncode == 0, built.stderr[-3000:]  # the build host has every -dev package: all helpers build
    env_dir = base / "venv"
    made = _run([sys.executable, "-m", "venv", str(env_dir)])  # no --system-site-packages: nothing leaks in
    assert made.returncode == 0, made.stderr
    wheel = next(wheel_dir.glob("*.whl"))
    got = _run([str(env_dir / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", str(wheel)])
    if got.returncode != 0:
        pytest.skip(
            f"the runtime dependencies could not be installed (package index unreachable?): "
            f"{got.stderr.strip().splitlines()[-1][:200]}"
        )
    return env_dir


def _clean_env(tmp: Path) -> dict[str, str]:
    """No PYTHONPATH to the checkout, a cwd outside it: only the installed copy can be imported."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PMUPROF_"))}
    return {**env, "HOME": str(tmp)}


def test_sdist_builds_every_helper(venv):
    wheel = next((venv.parent / "dist").glob("*.whl"))
    assert wheel.name.endswith(f"-py3-none-linux_{os.uname().machine}.whl"), wheel.name
    with zipfile.ZipFile(wheel) as zf:
        for name in HELPERS:
            assert zf.read(f"pmuprof/bin/{name}")[:4] == b"\x7fELF", name
        assert "pmuprof/rules/knowledge/latches.yaml" in zf.namelist()


def test_sdist_without_a_compiler_stops_and_names_each_helper(sdist, tmp_path):
    """No silent py3-none-any wheel: the build fails and says which helpers, why, and the way out."""
    failed = _pip_wheel(sdist, tmp_path / "dist", CC="false", BPF_CLANG="false")
    assert failed.returncode != 0 and not list((tmp_path / "dist").glob("*.whl"))
    said = [line.strip() for line in failed.stderr.splitlines() if line.strip().startswith("pmuprof: ")]
    for name in HELPERS:
        assert any(line.startswith(f"pmuprof: {name}:") for line in said), (name, said)
    assert any("PMUPROF_BUILD_NATIVE=optional" in line for line in said), said
    assert any("apt-get install gcc make" in line and "libbpf-dev" in line for line in said), said


def test_only_runtime_dependencies_are_installed(venv):
    listed = _run([str(venv / "bin" / "pip"), "list", "--format=json", "--disable-pip-version-check"])
    names = {d["name"].lower() for d in json.loads(listed.stdout)} - {"pip", "setuptools"}
    assert names == RUNTIME_DISTS, names  # no pytest, no build tools


def _owners(binary: Path) -> set[str]:
    """The Debian packages of the libraries `ldd` resolves for this binary."""
    libs = [line.split("=>")[1].split()[0] for line in _run(["ldd", str(binary)]).stdout.splitlines() if "=>" in line]
    assert libs and "not found" not in " ".join(libs), libs
    packages = set()
    for lib in libs:
        owner = _run(["dpkg", "-S", os.path.realpath(lib)])
        if owner.returncode != 0:
            owner = _run(["dpkg", "-S", lib])
        for line in owner.stdout.splitlines():  # "libpfm4:amd64: /lib/x86_64-linux-gnu/libpfm.so.4"
            packages |= {name.split(":")[0].strip() for name in line.rsplit(": ", 1)[0].split(",")}
    return packages


def test_helpers_need_exactly_the_listed_runtime_libraries(venv):
    """ldd of every helper: only DATABASE_HOST's libraries and the base system's, each of them needed."""
    if not (shutil.which("ldd") and shutil.which("dpkg")):
        pytest.skip("ldd/dpkg missing: not a Debian-like host")
    site = next((venv / "lib").glob("python3*/site-packages"))
    needed = {name: _owners(site / "pmuprof" / "bin" / name) for name in HELPERS}
    listed = set(DATABASE_HOST) - {"linux-perf", "pipx"}
    every = set().union(*needed.values())
    assert every <= listed | BASE_PACKAGES, every - listed - BASE_PACKAGES
    assert listed <= every, f"listed but linked by no helper: {listed - every}"
    assert "libbpf1" in needed["pmuprof-offcpu"]


def test_doctor_capture_and_schedule_from_the_installed_copy(venv, tmp_path):
    env, exe = _clean_env(tmp_path), str(venv / "bin" / "pmuprof")
    doctor = _run([exe, "doctor", "--json", "--no-mysql", "-o", str(tmp_path)], env=env, cwd=tmp_path)
    assert doctor.returncode == 0, doctor.stderr
    checks = {c["id"]: c for c in json.loads(doctor.stdout)["checks"]}
    site = str(next((venv / "lib").glob("python3*/site-packages")))
    for name in ("helper", "folder", "perfdata", "offcpu"):
        if checks[name]["ok"]:
            assert checks[name]["detail"].startswith(site), checks[name]  # the venv's own helper, not the checkout's
    assert all(checks[name]["ok"] for name in ("helper", "folder", "perfdata")), checks  # every listed package
    unit = _run(
        [
            exe,
            "schedule",
            "install",
            "--all-mysqld",
            "--dry-run",
            "--scheduler",
            "systemd",
            "--dir",
            str(tmp_path / "runs"),
        ],
        env=env,
        cwd=tmp_path,
    )
    assert unit.returncode == 0 and f"exec {os.path.realpath(exe)} capture --all-mysqld" in unit.stdout, unit.stdout
    man = venv / "share" / "man" / "man1" / "pmuprof.1"
    assert man.is_file() and man.read_text() == (REPO / "docs" / "pmuprof.1").read_text()
    need_perf()
    exe_busy, run = build_busy(tmp_path), tmp_path / "run"
    off_cpu = ["--off-cpu"] if checks["offcpu"]["ok"] else []  # root, BTF: the tracer from the wheel too
    argv = [exe, "capture", "-d", "2s", "--no-mysql", "-q", "-o", str(run), "--json", *off_cpu]
    with after_host_tier():  # the build tier runs beside the host tier: this tracer would be in its recordings
        busy = spawn_named([str(exe_busy)])  # busy until killed
        try:
            cap = _run([*argv, "-p", str(busy.pid)], env=env, cwd=tmp_path, timeout=300)
        finally:
            busy.kill()
            busy.wait()
    assert cap.returncode == 0, cap.stderr
    summary = json.loads(cap.stdout)
    assert summary["samples"] > 0 and (run / "report.html").is_file() and (run / "flame.svg").is_file()
    folded = (run / "stacks.folded").read_text()
    assert "hot_leaf" in folded
    if off_cpu:
        offcpu = json.loads((run / "run.json").read_text())["offcpu"]
        assert offcpu["recorded"] and offcpu["argv"][0].startswith(site), offcpu  # the venv's tracer


def test_pipx_install_of_the_wheel(venv, tmp_path):
    """pipx (installed into a scratch venv when missing) installs the wheel and links the command."""
    pipx = shutil.which("pipx")
    if pipx is None:
        tool_env = tmp_path / "pipx-venv"
        _run([sys.executable, "-m", "venv", str(tool_env)])
        got = _run([str(tool_env / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", "pipx"])
        if got.returncode != 0:
            pytest.skip("pipx is not installed and could not be fetched (apt-get install pipx)")
        pipx = str(tool_env / "bin" / "pipx")
    wheel = next((venv.parent / "dist").glob("*.whl"))
    env = {
        **_clean_env(tmp_path),
        "PIPX_HOME": str(tmp_path / "pipx"),
        "PIPX_BIN_DIR": str(tmp_path / "bin"),
        "PIPX_MAN_DIR": str(tmp_path / "man"),
    }
    done = _run([pipx, "install", str(wheel)], env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    link = tmp_path / "bin" / "pmuprof"
    version = _run([str(link), "--version"], env=env, cwd=tmp_path)
    assert version.returncode == 0 and "pmuprof, version" in version.stdout
    with zipfile.ZipFile(wheel) as zf:
        helpers = any(n.startswith("pmuprof/bin/") for n in zf.namelist())
    doctor = _run([str(link), "doctor", "--json", "--no-mysql", "-o", str(tmp_path)], env=env, cwd=tmp_path)
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert checks["native helper"]["ok"] == helpers or not helpers
    assert str(tmp_path / "pipx") in checks["native helper"]["detail"] or not helpers

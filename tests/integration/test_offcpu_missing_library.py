"""With libbpf.so.1 unloadable (bind-mounted over in a private mount namespace), `capture --off-cpu` stops
before recording with one line naming the package, and `doctor` says the same."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from helpers import REPO, build_busy, need_perf, spawn_named
from pmuprof.paths import offcpu_path


def _libbpf() -> str:
    exe = offcpu_path()
    if exe is None:
        pytest.skip("pmuprof-offcpu is not built")
    found = [
        line.split("=>")[1].split()[0]
        for line in subprocess.run(["ldd", str(exe)], capture_output=True, text=True).stdout.splitlines()
        if "libbpf.so" in line and "=>" in line
    ]
    if not found or os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root, unshare and a pmuprof-offcpu linked to libbpf")
    return found[0]


def _hidden(argv: list[str], tmp_path) -> subprocess.CompletedProcess:
    """argv with libbpf.so.1 replaced by an empty file, in a mount namespace of its own (the host is untouched)."""
    script = 'mount --bind /dev/null "$0" && exec "$@"'
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", script, _libbpf(), sys.executable, "-m", "pmuprof", *argv],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=REPO,
        env={**os.environ, "HOME": str(tmp_path)},
    )


def test_capture_off_cpu_without_libbpf_fails_before_recording(tmp_path):
    need_perf()
    busy = spawn_named([str(build_busy(tmp_path)), "30"])
    try:
        out = tmp_path / "run"
        res = _hidden(
            ["capture", "-p", str(busy.pid), "-d", "1s", "--no-mysql", "--off-cpu", "-q", "-o", str(out)], tmp_path
        )
    finally:
        busy.kill()
        busy.wait()
    assert res.returncode == 8, res.stderr
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr
    assert "libbpf.so.1" in res.stderr and "apt-get install libbpf1" in res.stderr
    assert not out.exists()  # nothing recorded: the error came first


def test_doctor_names_the_package_without_libbpf(tmp_path):
    res = _hidden(["doctor", "--json", "--no-mysql", "-o", str(tmp_path)], tmp_path)
    assert res.returncode == 0, res.stderr
    check = next(c for c in json.loads(res.stdout)["checks"] if c["id"] == "offcpu")
    assert not check["ok"] and check["fix"] == "apt-get install libbpf1" and "libbpf.so.1" in check["detail"]
    plain = subprocess.run(
        [sys.executable, "-m", "pmuprof", "doctor", "--json", "--no-mysql", "-o", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=REPO,
    )
    assert next(c for c in json.loads(plain.stdout)["checks"] if c["id"] == "offcpu")["ok"]  # not hidden: ok

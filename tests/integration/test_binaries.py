"""Binaries by build-id, as perf and gdb find them: separate debuginfo names a stripped binary's frames;
a missing binary, a rebuilt one and an unreachable debuginfod each give one clear line (real perf)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import need_perf, run_cli

PROG_C = r"""
#include <stdlib.h>
volatile long sink;
__attribute__((noinline)) void innodb_like_leaf(void) { for (long i = 0; i < 400000; i++) sink += i * 3; }
__attribute__((noinline)) void innodb_like_caller(void) { innodb_like_leaf(); sink++; }
int main(int argc, char **argv) {
    long rounds = (long)(atof(argc > 1 ? argv[1] : "1") * 1500);
    for (long r = 0; r < rounds; r++) innodb_like_caller();
    return 0;
}
"""


def _build(tmp: Path, name: str = "dbgprog", extra: tuple[str, ...] = ()) -> Path:
    src, exe = tmp / f"{name}.c", tmp / name
    src.write_text(PROG_C)
    subprocess.run(
        ["gcc", "-O1", "-g", "-fno-omit-frame-pointer", "-Wl,--build-id", *extra, "-o", str(exe), str(src)], check=True
    )
    return exe


def _build_id(path: Path) -> str:
    out = subprocess.run(["readelf", "-n", str(path)], capture_output=True, text=True, check=True).stdout
    return next(line.split()[-1] for line in out.splitlines() if "Build ID" in line)


@pytest.fixture(scope="module")
def stripped(tmp_path_factory):
    """A stripped binary with a debuglink, its debug file kept aside, and a perf.data + text of it."""
    need_perf()
    if not shutil.which("gcc") or not shutil.which("objcopy"):
        pytest.skip("gcc / binutils not installed")
    tmp = tmp_path_factory.mktemp("dbg")
    exe = _build(tmp)
    debug = tmp / "aside" / "dbgprog.debug"
    debug.parent.mkdir()
    subprocess.run(["objcopy", "--only-keep-debug", str(exe), str(debug)], check=True)
    subprocess.run(["strip", "--strip-all", str(exe)], check=True)
    data = tmp / "perf.data"
    # -N: no copy in perf's build-id cache, so only the path holds the binary (a rebuild then mismatches)
    subprocess.run(
        ["perf", "record", "-q", "-N", "-g", "-F", "999", "-o", str(data), "--", str(exe), "1.5"],
        check=True,
        capture_output=True,
        timeout=120,
    )
    text = tmp / "script.txt"
    with open(text, "w") as fh:  # symbolised now, while no debug file is anywhere perf looks
        subprocess.run(
            ["perf", "script", "-i", str(data), "-F", "comm,pid,tid,ip,sym,symoff,dso"],
            stdout=fh,
            stderr=subprocess.DEVNULL,
            check=True,
        )
    return exe, debug, data, text


def _symfs_with_debug(tmp: Path, debug: Path, build_id: str) -> Path:
    """A -dbgsym-style tree: <symfs>/usr/lib/debug/.build-id/xx/rest.debug."""
    where = tmp / "symfs" / "usr" / "lib" / "debug" / ".build-id" / build_id[:2]
    where.mkdir(parents=True)
    shutil.copy(debug, where / f"{build_id[2:]}.debug")
    return tmp / "symfs"


def _frames(out: Path) -> set[str]:
    """The program's own functions named in the report (fp unwinding may skip the leaf's caller)."""
    html = (out / "report.html").read_text()
    return {name for name in ("innodb_like_leaf", "main") if f'"{name}"' in html}


def _report(src: Path, out: Path, *extra: str, env: dict | None = None):
    return run_cli("report", str(src), "-o", str(out), "--comm", "dbgprog", *extra, env=env)


def test_without_debuginfo_the_code_is_grouped_not_named(stripped, tmp_path):
    exe, _, data, _ = stripped
    res = _report(data, tmp_path / "r")
    assert res.returncode == 0, res.stderr
    assert not _frames(tmp_path / "r")
    assert "[dbgprog+0x" in (tmp_path / "r" / "report.html").read_text()


def test_separate_debuginfo_names_the_frames_of_a_text_and_a_perf_data(stripped, tmp_path):
    exe, debug, data, text = stripped
    symfs = _symfs_with_debug(tmp_path, debug, _build_id(exe))
    for src, out in ((text, tmp_path / "from-text"), (data, tmp_path / "from-data")):
        res = _report(src, out, "--symfs", str(symfs))
        assert res.returncode == 0, res.stderr
        assert _frames(out) == {"innodb_like_leaf", "main"}, src
        assert "[dbgprog" not in (out / "report.html").read_text(), "no frame of the program left unnamed"


def test_rebuilt_binary_is_not_used_and_says_so(stripped, tmp_path):
    exe, _, data, _ = stripped
    copy = tmp_path / "data"
    copy.mkdir()
    (copy / "perf.data").write_bytes(data.read_bytes())
    saved = exe.read_bytes()
    try:
        _build(exe.parent, extra=("-DREBUILT=1", "-O2"))  # same path, another build-id
        # a private HOME: a system-wide `perf record` elsewhere on this host (another job) caches every
        # binary it sampled, this one's original included, in the shared ~/.debug, where it would be found
        res = _report(copy / "perf.data", tmp_path / "r", env={"HOME": str(tmp_path)})
    finally:
        exe.write_bytes(saved)
    assert res.returncode == 0, res.stderr
    lines = [line for line in res.stderr.splitlines() if "not the" in line and "that was recorded" in line]
    assert len(lines) == 1 and "--binary" in lines[0], res.stderr
    assert "that was recorded" in (tmp_path / "r" / "report.html").read_text()
    assert "[dbgprog+0x" not in (tmp_path / "r" / "report.html").read_text(), "a rebuilt binary is never read"


def test_missing_binary_says_so_once(stripped, tmp_path):
    exe, _, _, text = stripped
    moved = exe.with_name("dbgprog.moved")
    exe.rename(moved)
    try:
        res = _report(text, tmp_path / "r")
    finally:
        moved.rename(exe)
    assert res.returncode == 0, res.stderr
    lines = [line for line in res.stderr.splitlines() if "not found here" in line]
    assert len(lines) == 1 and "--symfs" in lines[0], res.stderr
    assert "not found here" in (tmp_path / "r" / "report.html").read_text()


def test_unreachable_debuginfod_says_so_once(stripped, tmp_path):
    if not shutil.which("debuginfod-find"):
        pytest.skip("debuginfod-find not installed (apt-get install debuginfod)")
    exe, _, _, text = stripped
    res = _report(text, tmp_path / "r", env={"DEBUGINFOD_URLS": "http://127.0.0.1:9"})
    assert res.returncode == 0, res.stderr
    lines = [line for line in res.stderr.splitlines() if line.startswith("pmuprof: warning: debuginfod")]
    assert len(lines) == 1 and "127.0.0.1:9) is unreachable" in lines[0], res.stderr
    report = json.loads((tmp_path / "r" / "findings.json").read_text())
    assert any("debuginfod" in w for w in report["profile"]["warnings"])

"""Several targets the way perf and pidof write them: -p 1,2 and -p $(pidof mariadbd) (fake perf, no root).
A word that is not a pid is refused in one line that never repeats it (it may be a password)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import FAKE_PERF, cli


@pytest.fixture
def two_targets():
    procs = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) for _ in range(2)]
    yield [p.pid for p in procs]
    for proc in procs:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("form", ["pidof", "comma", "repeated"])
def test_several_pids_become_several_targets(two_targets, tmp_path: Path, form: str) -> None:
    one, two = (str(p) for p in two_targets)
    pids = {"pidof": ["-p", one, two], "comma": ["-p", f"{one},{two}"], "repeated": ["-p", one, "-p", two, "-p", one]}
    out = tmp_path / "run"
    res = cli("record", *pids[form], "-d", "0.5", "--no-mysql", "-q", "-o", str(out), env=FAKE_PERF)
    assert res.returncode == 0, res.stderr
    run = json.loads((out / "run.json").read_text())
    assert [t["pid"] for t in run["targets"]] == [int(one), int(two)]


@pytest.mark.parametrize(
    "argv",
    [["-p", "{pid}", "hunter2"], ["-p", "{pid},hunter2"], ["-p", "hunter2"], ["-p", "{pid}", "hunter2", "{pid}"]],
)
def test_a_word_that_is_not_a_pid_is_one_line_not_echoed(two_targets, tmp_path: Path, argv: list[str]) -> None:
    args = [a.format(pid=two_targets[0]) for a in argv]
    res = cli("capture", *args, "-d", "0.5", "--no-mysql", "-q", "-o", str(tmp_path / "r"), env=FAKE_PERF)
    assert res.returncode == 2
    assert "hunter2" not in res.stderr + res.stdout
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pmuprof: error:"), res.stderr
    assert "--all-mysqld" in lines[0] and "-p 1,2,3" in lines[0]
    assert not (tmp_path / "r").exists(), "nothing was recorded"


def test_help_names_the_forms() -> None:
    res = cli("capture", "--help")
    assert "-p 1,2 (perf's" in res.stdout and "$(pidof mariadbd)" in res.stdout

"""One -p grammar for every command that takes live processes: -p PID, -p A,B, -p $(pidof ...) (the shell
splits it into -p A B) and -p A -p B; the same refusal, never echoed, for a word that is not a pid. Input
commands (report, export, diff, annotate) take --pid A,B or --pid A --pid B for processes of a recording.
Each command runs in this process (helpers.cli); watch, stopped by SIGINT, runs as its own."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import FAKE_PERF, REPO, cli

FORMS = ("comma", "pidof", "repeated")


@pytest.fixture
def two_targets():
    procs = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"]) for _ in range(2)]
    yield [p.pid for p in procs]
    for proc in procs:
        proc.kill()
        proc.wait()


def _pids(form: str, one: int, two: int) -> list[str]:
    return {
        "comma": ["-p", f"{one},{two}"],
        "pidof": ["-p", str(one), str(two)],
        "repeated": ["-p", str(one), "-p", str(two), "-p", str(one)],
    }[form]


@pytest.mark.parametrize("form", FORMS)
def test_capture(two_targets, tmp_path: Path, form: str) -> None:
    out = tmp_path / "run"
    args = _pids(form, *two_targets)
    res = cli("capture", *args, "-d", "0.5", "--no-mysql", "--no-off-cpu", "-q", "-o", str(out), env=FAKE_PERF)
    assert res.returncode == 0, res.stderr
    assert [t["pid"] for t in json.loads((out / "run.json").read_text())["targets"]] == two_targets


@pytest.mark.parametrize("form", FORMS)
def test_doctor(two_targets, form: str) -> None:
    res = cli("doctor", "--json", "--no-mysql", *_pids(form, *two_targets))
    checks = json.loads(res.stdout)["checks"]
    assert sorted({c["pid"] for c in checks if c["pid"] is not None}) == sorted(two_targets), checks


@pytest.mark.parametrize("form", FORMS)
def test_schedule_install(two_targets, tmp_path: Path, form: str) -> None:
    args = ["schedule", "install", *_pids(form, *two_targets), "--dry-run", "--scheduler", "cron"]
    res = cli(*args, "--dir", str(tmp_path / "runs"))
    assert res.returncode == 0, res.stderr
    assert f"capture -p {two_targets[0]},{two_targets[1]} --duration" in res.stdout


@pytest.mark.parametrize("form", FORMS)
def test_watch_polls_each_server(two_targets, tmp_path: Path, form: str) -> None:
    """cpu>100000 never holds: watch polls both servers on their own until Ctrl-C."""
    argv = [sys.executable, "-m", "pmuprof", "watch", *_pids(form, *two_targets), "-t", "cpu>100000"]
    argv += ["--interval", "0.2s", "--no-mysql", "--no-retention", "-v", "-o", str(tmp_path / "w")]
    env = {"PYTHONPATH": str(REPO), **FAKE_PERF}
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env={**os.environ, **env})
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and sum(f"pid {two_targets[1]}: " in ln for ln in lines) < 2:
            line = proc.stderr.readline()
            if not line:
                break
            lines.append(line)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = "".join(lines)
    assert f"watching pid {two_targets[0]}, {two_targets[1]} every 0.2 s" in text, text
    assert f"pid {two_targets[0]}: " in text and f"pid {two_targets[1]}: " in text, text


@pytest.mark.parametrize("command", [["doctor"], ["watch", "-t", "cpu>1"], ["schedule", "install", "--dry-run"]])
def test_a_word_that_is_not_a_pid_is_refused_in_one_line(two_targets, command: list[str]) -> None:
    res = cli(*command, "-p", str(two_targets[0]), "hunter2")
    assert res.returncode == 2 and "hunter2" not in res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "-p 1,2,3" in lines[0] and "$(pidof mariadbd)" in lines[0], res.stderr


def test_annotate_takes_a_comma_list() -> None:
    """The recording's target is 13104: --pid 13104,99 keeps it (the command goes on past the choice of
    processes), --pid 99 alone keeps nothing."""
    run = str(REPO / "examples" / "mariadb-output" / "delay200")
    for pids in (["--pid", "13104,99"], ["--pid", "13104", "--pid", "99"]):
        res = cli("annotate", run, "--symbol", "ut_delay", *pids, "--json")
        assert "none of the chosen processes" not in res.stderr and "takes a process id" not in res.stderr
    res = cli("annotate", run, "--symbol", "ut_delay", "--pid", "99")
    assert res.returncode != 0 and "none of the chosen processes" in res.stderr

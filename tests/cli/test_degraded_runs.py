"""Runs that must not look clean: server facts asked for and not collected (exit 11, the textfile says
failed), and a reader that goes away (`capture … 2>&1 | head -1`, or only stderr's), or a stderr closed before
the start (`2>&-`), costing neither the report nor the status."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from helpers import FAKE_PERF, REPO, run_cli


@pytest.fixture
def fake_mariadbd(tmp_path):
    """A process whose comm is mariadbd (a copy of sleep): capture takes it for a server and asks it for facts."""
    exe = tmp_path / "mariadbd"
    shutil.copy2(shutil.which("sleep"), exe)
    proc = subprocess.Popen([str(exe), "120"])
    yield proc
    proc.kill()
    proc.wait()


def _metrics(path):
    return {
        line.rpartition(" ")[0].split("{")[0]: line.rpartition(" ")[2]
        for line in path.read_text().splitlines()
        if not line.startswith("#")
    }


def _capture(pid: int, out, *extra: str):
    return run_cli("capture", "-p", str(pid), "-d", "1s", "-q", "-o", str(out), *extra, env=FAKE_PERF)


def test_facts_asked_for_and_not_collected_is_exit_11_and_a_failed_run(fake_mariadbd, tmp_path):
    prom = tmp_path / "nightly.prom"
    socket = tmp_path / "no-server.sock"
    res = _capture(fake_mariadbd.pid, tmp_path / "run", "--mysql-socket", str(socket), "--textfile", str(prom))
    assert res.returncode == 11, res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("pmuprof: error: server facts not collected") and str(socket) in last, res.stderr
    assert (tmp_path / "run" / "report.html").is_file()  # the stacks are reported all the same
    metrics = _metrics(prom)
    assert metrics["pmuprof_last_run_failed"] == "1" and metrics["pmuprof_last_run_exit_code"] == "11"
    assert "pmuprof_last_success_timestamp_seconds" not in metrics and "pmuprof_findings" not in metrics


def test_no_mysql_asks_for_no_facts(fake_mariadbd, tmp_path):
    prom = tmp_path / "nightly.prom"
    res = _capture(fake_mariadbd.pid, tmp_path / "run", "--no-mysql", "--textfile", str(prom))
    assert res.returncode == 0, res.stderr
    metrics = _metrics(prom)
    assert metrics["pmuprof_last_run_failed"] == "0" and "pmuprof_last_success_timestamp_seconds" in metrics


@pytest.mark.parametrize("joined", [True, False], ids=["2>&1 | head -1", "| head -1"])
def test_a_reader_that_goes_away_costs_neither_the_report_nor_the_status(target, tmp_path, joined):
    """The pipe's reader takes one line and closes it; capture goes on, writes its report and exits with
    its own status (10 or 20: --exit-code-on-findings on the canned stacks), not 1 or 0."""
    out = tmp_path / "run"
    argv = [sys.executable, "-m", "pmuprof", "capture", "-p", str(target.pid), "-d", "1s", "--no-mysql"]
    argv += ["-o", str(out), "--json", "--exit-code-on-findings"]
    env = {**os.environ, **FAKE_PERF, "PYTHONPATH": str(REPO)}
    stderr = subprocess.STDOUT if joined else subprocess.DEVNULL
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=stderr)
    first = proc.stdout.readline()
    proc.stdout.close()  # head -1 has exited
    assert proc.wait(timeout=300) in (10, 20), first
    assert first.startswith(b"pmuprof: recording" if joined else b"{"), first
    assert (out / "report.html").is_file() and (out / "findings.json").is_file()


def _capture_argv(pid: int, out) -> list[str]:
    argv = [sys.executable, "-m", "pmuprof", "capture", "-p", str(pid), "-d", "1s", "--no-mysql"]
    return argv + ["-o", str(out), "--json", "--exit-code-on-findings"]


def _assert_whole(out, summary, code: int) -> None:
    """Its own status (10 or 20 on the canned stacks), the report, and the whole --json summary on stdout."""
    assert code in (10, 20), code
    assert (out / "report.html").is_file() and (out / "findings.json").is_file()
    doc = json.loads(summary.read_text())
    assert doc["run_dir"] == str(out) and doc["exit_code"] == code, doc


def test_only_stderrs_reader_goes_away(target, tmp_path):
    """stdout into a file, stderr into a pipe whose reader takes one line and leaves (`2>&1 >file | head -1`)."""
    out, summary = tmp_path / "run", tmp_path / "summary.json"
    env = {**os.environ, **FAKE_PERF, "PYTHONPATH": str(REPO)}
    with open(summary, "wb") as stdout:
        proc = subprocess.Popen(_capture_argv(target.pid, out), env=env, stdout=stdout, stderr=subprocess.PIPE)
        first = proc.stderr.readline()
        proc.stderr.close()
        code = proc.wait(timeout=300)
    assert first.startswith(b"pmuprof: recording"), first
    _assert_whole(out, summary, code)


@pytest.mark.parametrize("redirect", ["2>&-", "2</dev/null"])
def test_a_stderr_closed_or_unwritable_from_the_start(target, tmp_path, redirect):
    """fd 2 closed (Python's sys.stderr is None) or open for reading only (every write fails with EBADF): the
    capture's progress lines go nowhere, its report and summary are whole, and no internal error is saved."""
    out, summary, cache = tmp_path / "run", tmp_path / "summary.json", tmp_path / "cache"
    env = {**os.environ, **FAKE_PERF, "PYTHONPATH": str(REPO), "XDG_CACHE_HOME": str(cache)}
    script = f'exec "$@" {redirect}'
    with open(summary, "wb") as stdout:
        done = subprocess.run(["sh", "-c", script, "sh", *_capture_argv(target.pid, out)], env=env, stdout=stdout)
    _assert_whole(out, summary, done.returncode)
    assert not (cache / "pmuprof" / "errors").exists(), list((cache / "pmuprof" / "errors").iterdir())


def test_a_watch_capture_without_its_facts_is_published_as_failed(fake_mariadbd, tmp_path):
    """The watch goes on (its exit status is the watch's); each capture's metrics carry the degraded run."""
    prom = tmp_path / "watch.prom"
    res = run_cli(
        *("watch", "-p", str(fake_mariadbd.pid), "-t", "cpu>=0", "--cycles", "1", "--max-captures", "1"),
        *("-d", "1", "--interval", "0.2", "--mysql-socket", str(tmp_path / "none.sock")),
        *("-o", str(tmp_path / "w"), "--textfile", str(prom)),
        env=FAKE_PERF,
    )
    assert res.returncode == 0 and "warning: server facts not collected" in res.stderr, res.stderr
    metrics = _metrics(prom)
    assert metrics["pmuprof_last_run_failed"] == "1" and metrics["pmuprof_last_run_exit_code"] == "11"

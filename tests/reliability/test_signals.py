"""Item 4 and Ctrl-C of item 10, with real perf and real signals: SIGTERM, SIGHUP and Ctrl-C stop
the capture like the clock does and still write run.json and the report; a second signal or SIGKILL
leaves a run directory that `pmuprof report` and retention both handle; a killed perf is named."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from helpers import REPO

from .conftest import SIGNAL_CASES, finish, one_line, spawn_cli, wait_for


def _no_process_mentions(path: Path) -> bool:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if str(path).encode() in (entry / "cmdline").read_bytes():
                    return False
            except OSError:
                continue
    return True


@pytest.fixture
def stopped(live):
    return {case: (res, out) for case, (res, _, out) in live[0].items()}


@pytest.mark.parametrize("case", list(SIGNAL_CASES))
def test_stop_signal_writes_run_json_and_report_then_exits_128_plus_n(stopped, case):
    res, out = stopped[case]
    one_line(res, SIGNAL_CASES[case], f"capture stopped by {case}", str(out / "report.html"))
    run = json.loads((out / "run.json").read_text())
    assert run["interrupted"] and run["stopped_by"] == case and run["duration_s"] < 60  # the signal, not the clock
    assert "hot_leaf" in (out / "stacks.folded").read_text() and (out / "report.html").is_file()
    assert not (out / ".perf-ctl").exists() and not (out / ".perf-ack").exists()
    assert _no_process_mentions(out), "perf was left running"


def test_unreachable_server_is_one_warning_line_while_the_capture_goes_on(stopped):
    res, out = stopped["SIGTERM"]
    warnings = [line for line in res.err.splitlines() if "server facts not collected" in line]
    assert len(warnings) == 1 and warnings[0].startswith("pmuprof: warning:"), res.err
    assert json.loads((out / "mysql.json").read_text())["reachable"] is False


def test_killed_perf_is_named_and_its_samples_reported(stopped):
    res, out = stopped["perf-killed"]
    one_line(res, 5, "perf record was killed by SIGKILL", "the report covers what it wrote")
    assert "Events disabled" not in res.err
    assert (out / "report.html").is_file() and json.loads((out / "run.json").read_text())["stopped_by"] == "perf-killed"


def test_second_signal_during_folding_leaves_a_reportable_directory(stopped, pmuprof):
    res, out = stopped["again"]
    one_line(res, 143, "before the report was built", f"pmuprof report {out}")
    assert not (out / "stacks.folded").exists() and not (out / "report.html").exists()
    assert pmuprof("report", out).code == 0 and "hot_leaf" in (out / "report.html").read_text()


FOLD = REPO / "native" / "build" / "pmuprof-fold"


def test_one_stop_signal_while_folding_finishes_the_report_first(busy, tmp_path):
    """The capture's window ended by the clock; SIGTERM while it folds: the report is what the capture was for,
    so it is written, then the exit is 143 (docs/safety.md). A second signal stops at once (the test above).
    Its folder (pmuprof-fold after perf script) says when it has begun, then takes 4 s more."""
    if not FOLD.is_file():
        pytest.skip("pmuprof-fold is not built")
    began, late_fold, out = tmp_path / "folding-began", tmp_path / "late-fold", tmp_path / "run"
    late_fold.write_text(f'#!/bin/sh\necho began > {began}\nsleep 4\nexec {FOLD} "$@"\n')
    late_fold.chmod(0o755)
    env = {"PMUPROF_FOLD": str(late_fold), "PMUPROF_PERFDATA": ""}
    proc = spawn_cli("capture", "-p", busy.pid, "-d", "2", "-o", out, "--no-mysql", "--no-off-cpu", env=env)
    wait_for(began, timeout=300, proc=proc)
    proc.send_signal(signal.SIGTERM)
    res = finish(proc, timeout=300)
    one_line(res, 143, "SIGTERM came while the report was built: finished it first", str(out / "report.html"))
    assert "SIGTERM: finishing the report first" in res.err
    assert "hot_leaf" in (out / "stacks.folded").read_text() and "hot_leaf" in (out / "report.md").read_text()
    assert json.loads((out / "run.json").read_text())["stopped_by"] == ""


def test_sigkill_of_pmuprof_leaves_a_run_that_reports_and_is_pruned(stopped, pmuprof):
    res, out = stopped["nightly/killed"]
    assert res.code == -signal.SIGKILL
    deadline = time.monotonic() + 300  # a hang detector: perf closes its file on PDEATHSIG, late on a loaded host
    while not _no_process_mentions(out) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert (out / ".perf-ctl").exists(), "a killed capture leaves perf's control FIFOs behind"
    assert (out / ".pmuprof-room").stat().st_size > 4 << 20, "and the room it held for its last files"
    perf_data = (out / "perf.data").read_bytes()
    assert pmuprof("report", out).code == 0 and (out / "report.html").is_file()
    assert not (out / ".pmuprof-room").exists(), "the report gives the room of a killed capture back"
    assert (out / "perf.data").read_bytes() == perf_data, "the report repairs a copy, never the evidence"
    newer = out.parent / "newer"
    newer.mkdir()
    (newer / "run.json").write_text(json.dumps({"pmuprof_version": "0.1.0", "started": "2099-01-01T00:00:00Z"}))
    res = pmuprof("schedule", "prune", "--dir", out.parent, "--keep-size", "1")
    assert "deleted killed" in res.err and not out.exists(), res.err

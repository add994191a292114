"""In-process work runs under a CPU deadline: a stage past its budget is one line and exit 6, never a hang."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import run_cli
from pmuprof import deadline

REPO = Path(__file__).resolve().parents[2]


def test_spinning_stage_is_stopped():
    start = time.process_time()
    with pytest.raises(deadline.StageTimeout, match="spinning used more than 0.2 s of CPU"):
        with deadline.cpu_bounded("spinning", 0.2):
            while True:
                pass
    assert time.process_time() - start < 2.0


def test_timer_and_handler_are_restored():
    import signal

    before = signal.getsignal(signal.SIGPROF)
    with deadline.cpu_bounded("nothing", 5.0):
        assert signal.getitimer(signal.ITIMER_PROF)[0] > 0
    assert signal.getitimer(signal.ITIMER_PROF) == (0.0, 0.0) and signal.getsignal(signal.SIGPROF) is before


def test_nested_stage_runs_under_the_outer_budget():
    with pytest.raises(deadline.StageTimeout, match="outer"):
        with deadline.cpu_bounded("outer", 0.2):
            with deadline.cpu_bounded("inner", 100.0):
                while True:
                    pass


def test_report_past_its_budget_is_one_line(tmp_path):
    folded = tmp_path / "big.folded"
    subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "gen_folded.py"), "60000", str(folded)],
        check=True,
        capture_output=True,
    )
    res = run_cli("report", str(folded), "-o", str(tmp_path / "out"), env={deadline.ENV: "0.3"})
    assert res.returncode == 6, res.stderr
    errors = [line for line in res.stderr.splitlines() if line.startswith("pmuprof: error:")]
    assert len(errors) == 1 and "of CPU: stopped" in errors[0] and deadline.ENV in errors[0], res.stderr
    assert "Traceback" not in res.stderr
    res = run_cli("report", str(folded), "-o", str(tmp_path / "out2"))
    assert res.returncode == 0, res.stderr

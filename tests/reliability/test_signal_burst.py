"""Issue 26, signals: `timeout` sends SIGTERM to pmuprof, then to its process group, 0.2 ms apart. Such a
burst of stop signals is one request: the capture stops and its report is still written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from helpers import REPO

FAKE = {"PMUPROF_PERF": str(REPO / "tests" / "fakeperf" / "perf")}


@pytest.fixture
def target():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield proc
    proc.kill()
    proc.wait()


@pytest.mark.parametrize("gap_s", [0.01, 0.1])
def test_a_burst_of_sigterm_is_one_stop_and_the_report_is_written(target, tmp_path, gap_s):
    out = tmp_path / "run"
    env = {**os.environ, **FAKE, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "pmuprof", "capture", "-p", str(target.pid), "-d", "60",
                             "--no-mysql", "-o", str(out)], env=env, text=True, start_new_session=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        seen = []
        for line in proc.stderr:  # until the recording window opens (EOF if pmuprof ended first)
            seen.append(line)
            if "recording " in line:
                break
        time.sleep(1.0)  # well inside the 60 s window
        os.kill(proc.pid, signal.SIGTERM)  # as timeout(1) does: the child, then its whole group
        time.sleep(gap_s)
        os.killpg(proc.pid, signal.SIGTERM)
        rest_out, rest_err = proc.communicate(timeout=120)  # generous: the fake capture ends in a second or two
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    err = "".join(seen) + rest_err
    assert proc.returncode == 143, err
    errors = [ln for ln in err.splitlines() if ln.startswith("pmuprof: error:")]
    assert len(errors) == 1 and "capture stopped by SIGTERM" in errors[0], err
    assert (out / "report.html").is_file(), err
    assert json.loads((out / "run.json").read_text())["stopped_by"] == "SIGTERM"

"""Issue 34, numbers that say what happened: perf lowers -F to kernel.perf_event_max_sample_rate (one warning
on its stderr), so run.json and the report give the rate the recording says perf used, not the one asked.

The cap is lowered for the capture alone: in a mount namespace of its own, a file holding 100 is bound over
/proc/sys/kernel/perf_event_max_sample_rate, which is where perf reads it (the kernel's own cap, the other
users of this host, stay as they were). Real perf on a process that spins on one CPU."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys

import pytest

from helpers import REPO, need_perf

CAP_FILE = "/proc/sys/kernel/perf_event_max_sample_rate"
ASKED, CAP, SECONDS = 999, 100, 4


@pytest.fixture(scope="module")
def throttled(tmp_path_factory):
    need_perf()
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare (util-linux) for a mount namespace")
    tmp = tmp_path_factory.mktemp("rate")
    (tmp / "cap").write_text(f"{CAP}\n")
    spin = subprocess.Popen(["sh", "-c", "while :; do :; done"])  # one CPU busy all the time
    run = tmp / "run"
    inner = (
        f"mount --bind {tmp / 'cap'} {CAP_FILE} && exec {sys.executable} -m pmuprof capture -p {spin.pid} "
        f"-d {SECONDS} -F {ASKED} --mode per-thread --no-mysql --no-off-cpu -o {run}"
    )
    try:
        res = subprocess.run(
            ["unshare", "-m", "--propagation", "private", "sh", "-c", inner],
            env={**os.environ, "PYTHONPATH": str(REPO)},
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        spin.kill()
        spin.wait()
    if "mount" in res.stderr and res.returncode != 0 and not run.exists():
        pytest.skip(f"cannot bind a file over {CAP_FILE} here: {res.stderr.strip()[-200:]}")
    assert res.returncode == 0, res.stderr
    return run, res


def test_run_json_has_the_rate_perf_used_and_the_one_asked(throttled):
    run, _ = throttled
    record = json.loads((run / "run.json").read_text())["record"]
    assert record["frequency"] == CAP and record["frequency_requested"] == ASKED
    warnings = json.loads((run / "run.json").read_text())["warnings"]
    assert any(f"perf sampled at {CAP} Hz, not the {ASKED} Hz asked" in w for w in warnings), warnings


def test_the_samples_came_at_the_rate_run_json_says(throttled):
    """cpu-clock samples a thread every 1/rate s of its CPU time: with task-clock (perf stat on the same
    thread) T s, about 100 T samples, not 999 T. The band is 5 sigma of a Poisson count plus 10 % for the
    edges of the window (perf stat and perf record start and stop a few ms apart)."""
    run, _ = throttled
    meta = json.loads((run / "run.json").read_text())
    counters = {c["event"]: c for c in json.loads((run / "counters.json").read_text())["events"]}
    cpu_s = counters["task-clock"]["value"] / 1000
    samples, expected = meta["record"]["samples_total"], CAP * cpu_s
    assert cpu_s > 0.5, counters["task-clock"]
    assert abs(samples - expected) <= 5 * math.sqrt(expected) + 0.1 * expected, (samples, cpu_s)
    assert samples < ASKED * cpu_s / 3


def test_the_report_says_the_rate_used(throttled):
    run, _ = throttled
    assert f"{CAP} Hz (asked {ASKED} Hz, throttled)" in (run / "report.md").read_text()
    assert f"at {CAP} Hz (asked {ASKED} Hz, throttled)" in (run / "report.html").read_text()
    assert json.loads((run / "findings.json").read_text())["profile"]["frequency"] == CAP

"""The host's load while perf records (pt-stalk's vmstat/mpstat from /proc): in run.json, and a finding on the
first screen when runnable tasks queue for the CPUs."""

from __future__ import annotations

import json
import os

from helpers import Hogs, capture_under


def test_a_saturated_host_is_measured_and_said_first(busy, tmp_path):
    """Four spinning shells per CPU beside the target: the run queue is several times the CPU count
    whatever else the host runs, so the decision does not hang on this machine's other load."""
    cpus = os.cpu_count() or 1
    spinners = Hogs(4)
    out = tmp_path / "run"
    try:  # the spinners run from before pmuprof starts until the recording ends, not through the report
        res = capture_under(
            spinners.stop, out, "-p", str(busy.pid), "-d", "3", "-F", "99", "--no-mysql", "--no-off-cpu"
        )
    finally:
        spinners.stop()
    assert res.returncode in (0, 1), res.stderr  # 1: findings at warning or above (--exit-code-on-findings off)
    load = json.loads((out / "run.json").read_text())["host_load"]
    assert load["cpus"] == cpus and load["seconds"] >= 2.5
    assert load["runnable_avg"] >= 2 * cpus and load["busy_share"] >= 0.9, load
    assert load["targets_share"] < 0.5, load  # one spinning thread among 4 spinners per CPU
    found = json.loads((out / "findings.json").read_text())
    mine = next(f for f in found["findings"] if f["rule"] == "host-saturated")
    assert mine["severity"] in ("warning", "critical") and mine["confidence"]["basis"].startswith("the host's CPU time")
    assert f"{load['cpus']} CPUs" in mine["message"]
    assert found["verdict"]["rule"] == "host-saturated"  # the target's own profile has nothing graver
    assert "**Verdict: The host is saturated" in (out / "report.md").read_text()

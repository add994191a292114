"""pmuprof-helper count (software events on a live pid, partial results) and pause (PAUSE calibration)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from native_support import helper_binary, run_helper

BUSY = "import time\nend = time.time() + {s}\nwhile time.time() < end: pass\n"


@pytest.fixture(scope="module")
def helper():
    return helper_binary()


def _busy(seconds: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", BUSY.format(s=seconds)])


def test_software_events_count_on_a_live_pid(helper):
    proc = _busy(5)
    try:
        rc, data = run_helper(helper, "count", "--pid", str(proc.pid), "--duration", "0.5",
                              "-e", "task-clock", "-e", "context-switches", "-e", "page-faults",
                              "-e", "cycles", "-e", "no-such-event")
    finally:
        proc.kill()
        proc.wait()
    assert rc == 0 and data["threads"] >= 1 and not data["partial"]
    c = {row["event"]: row for row in data["counters"]}
    assert c["task-clock"]["supported"] and c["task-clock"]["value"] > 1e6  # a busy loop gets some CPU even on a loaded host
    assert c["task-clock"]["time_enabled_ns"] >= c["task-clock"]["time_running_ns"] > 0
    assert c["task-clock"]["scaled"] >= c["task-clock"]["value"]
    assert c["cycles"]["supported"] or "not supported" in c["cycles"]["error"]
    assert c["no-such-event"]["error"].startswith("unknown event")


def test_pid_exiting_mid_count_gives_partial_result(helper):
    proc = _busy(0.3)
    try:
        rc, data = run_helper(helper, "count", "--pid", str(proc.pid), "--duration", "5", "-e", "task-clock")
    finally:
        proc.wait()
    assert rc == 0 and data["partial"] and "exited" in data["note"]
    assert data["duration_s"] < 4
    assert data["counters"][0]["value"] > 0


def test_missing_pid(helper):
    rc, data = run_helper(helper, "count", "--pid", "999999999", "--duration", "0.1")
    assert rc != 0 and data["error"] == "no such process"


def test_pause_calibration(helper):
    rc, data = run_helper(helper, "pause", "--trials", "20")
    assert rc == 0 and data["method"] == "rdtsc"
    assert 1 <= data["cycles"] <= 1000 and data["ns"] > 0
    assert 0.5e9 < data["tsc_hz"] < 10e9
    assert abs(data["ns"] - data["cycles"] * 1e9 / data["tsc_hz"]) < 0.01 * data["ns"]
    mariadb = data["mariadb"]
    assert mariadb["my_cpu_relax_multiplier"] == (100 if data["ticks_per_pause"] > 30 else 200)


def test_python_wrappers(helper, monkeypatch):
    from pmuprof.tools.native import helper as pyhelper

    monkeypatch.setenv("PMUPROF_HELPER", str(helper))
    assert set(pyhelper.features()) == {"libpfm4", "elfutils", "capstone"}
    assert pyhelper.calibrate_pause(10)["cycles"] > 0
    proc = _busy(3)
    try:
        out = pyhelper.count(proc.pid, 0.2, ["task-clock"])
    finally:
        proc.kill()
        proc.wait()
    assert out["counters"][0]["value"] > 0

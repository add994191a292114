"""pmuprof-helper pause (PAUSE calibration) and the Python wrappers of the helper."""

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

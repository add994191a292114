"""The capture host's wall clock for the per-second strip: the clock pair run.json keeps, read back, and
the strip's second 0 placed on it (exactly with the pair, approximately from the start time, else not)."""

from __future__ import annotations

import os
import time

import pytest

from pmuprof.capture.record import read_clock
from pmuprof.model import rundir
from pmuprof.model.run import Clock, Run
from pmuprof.report.seconds import wall_clock


def test_second_zero_from_the_clock_pair():
    run = Run(
        started="2026-11-28T15:03:05Z",
        clock=Clock(monotonic_s=4999.5, epoch_s=1795878187.0, utc_offset_s=3600, zone="CET"),
    )
    # perf second 5000 began half a second after the pair was read
    assert wall_clock(run, 5000) == {"t0": 1795878187.5, "offset": 3600, "zone": "CET", "exact": True}


def test_start_time_alone_is_approximate_and_utc():
    got = wall_clock(Run(started="2026-11-28T15:03:05Z"), 5000)
    assert got == {"t0": 1795878185.0, "offset": 0, "zone": "", "exact": False}
    assert wall_clock(Run(started="yesterday"), 5000) is None
    assert wall_clock(Run(), 5000) is None


def test_clock_round_trips_through_run_json(tmp_path):
    run = Run(started="2026-11-28T15:03:05Z", clock=Clock(4999.5, 1795878187.0, -16200, "-0430"))
    rundir.write_typed(tmp_path / rundir.RUN_JSON, run)
    assert rundir.read_run(tmp_path).clock == run.clock
    rundir.write_typed(tmp_path / rundir.RUN_JSON, Run(started="2026-11-28T15:03:05Z"))  # an older run: none
    assert rundir.read_run(tmp_path).clock is None


@pytest.fixture
def kolkata():
    old = os.environ.get("TZ")
    os.environ["TZ"] = "Asia/Kolkata"
    time.tzset()
    yield
    if old is None:
        os.environ.pop("TZ")
    else:
        os.environ["TZ"] = old
    time.tzset()


def test_read_clock_pairs_the_clocks_and_keeps_the_host_offset(kolkata):
    c = read_clock()
    assert c.utc_offset_s == 19800 and c.zone == "IST"
    # the pair says what time.time() says now (to a few milliseconds on a quiet host; a starved test process may
    # be preempted between its two readings, and a wrong pairing is off by hours)
    assert c.epoch_s + (time.monotonic() - c.monotonic_s) == pytest.approx(time.time(), abs=1.0)

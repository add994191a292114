"""series.json: the one per-second type every capture source keeps, keyed on the capture's monotonic second."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from pmuprof.model import rundir
from pmuprof.model.jsontypes import from_json, to_json
from pmuprof.model.series import Series, SeriesSet


def _runnable() -> Series:
    return Series.of("host.runnable", "host", "tasks", "runnable tasks", True, {100: 2.0, 103: 5.0})


def test_a_series_is_aligned_on_the_strips_seconds_and_cut_to_a_window():
    s = _runnable()
    assert (s.first, s.values) == (100, (2.0, None, None, 5.0))  # a second not measured is None
    assert s.aligned(99, 6) == [None, 2.0, None, None, 5.0, None]
    assert list(s.points()) == [(100, 2.0), (103, 5.0)]
    assert (s.within(101, 200).first, s.within(101, 200).values) == (101, (None, None, 5.0))
    assert s.within(200, 300).values == () and s.within(0, 100).values == (2.0,)


def test_series_json_round_trips_through_its_type(tmp_path: Path):
    table = SeriesSet(series=(_runnable(),))
    rundir.write_typed(tmp_path / rundir.SERIES, table, compact=True)
    notes: list[str] = []
    assert rundir.read_series(tmp_path, notes) == table and notes == []
    assert json.loads((tmp_path / rundir.SERIES).read_text())["clock"] == "CLOCK_MONOTONIC"
    assert rundir.SERIES in rundir.RUN_FILES  # retention deletes it with the run


@pytest.mark.parametrize(
    "change, why",
    [
        ({"first": -1}, "first must be a second of the clock"),
        ({"values": [1.0, "x", 2.0]}, "series[0].values[1]: expected a number, got a string"),
        ({"values": [1.0, True]}, "series[0].values[1]"),
    ],
)
def test_a_damaged_series_json_is_left_out_with_one_note(tmp_path: Path, change: dict, why: str):
    data = to_json(SeriesSet(series=(_runnable(),)))
    data["series"][0].update(change)
    (tmp_path / rundir.SERIES).write_text(json.dumps(data))
    notes: list[str] = []
    assert rundir.read_series(tmp_path, notes) is None
    assert len(notes) == 1 and why in notes[0] and notes[0].endswith("left out of the report"), notes


def test_a_name_is_one_series():
    with pytest.raises(TypeError, match="named twice"):
        from_json(SeriesSet, {"series": [to_json(_runnable()), to_json(_runnable())]})


def test_an_hour_of_five_hundred_counters_is_written_and_read_in_seconds(tmp_path: Path):
    """What issue 31's status collector keeps at most (SHOW GLOBAL STATUS once a second for a 1-hour
    capture): compact on disk and read without a Python call per value. Bounds for a loaded 2-vCPU CI host."""
    values = tuple(float(i % 997) * 1.5 for i in range(3600))
    table = SeriesSet(series=tuple(Series(f"status.V{i}", "status", "/s", "", False, 1000, values) for i in range(500)))
    start = time.process_time()
    rundir.write_typed(tmp_path / rundir.SERIES, table, compact=True)
    notes: list[str] = []
    assert rundir.read_series(tmp_path, notes) == table
    assert time.process_time() - start < 15 and (tmp_path / rundir.SERIES).stat().st_size < 16 << 20

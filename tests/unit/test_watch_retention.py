"""watch's retention (by count, age and size; only its own captures, never one being written) and the
lead-up table it writes beside each capture (watch-polls.tsv)."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from pmuprof.errors import InputError
from pmuprof.model import rundir
from pmuprof.model.watchpolls import FIXED, PollRow, WatchPolls, read_tsv, write_tsv
from pmuprof.workflows.schedule import RunEntry, age_text, plan_retention
from pmuprof.workflows.triggers import Poll, parse_condition, parse_duration
from pmuprof.workflows.watch import Retention, apply_retention, made_by_watch, poll_table

DAY = 86400.0
NOW = dt.datetime(2026, 11, 28, 12, tzinfo=dt.timezone.utc).timestamp()


def _entry(name: str, age_days: float, size: int = 100, busy: bool = False) -> RunEntry:
    return RunEntry(name, NOW - age_days * DAY, size, True, busy)


def test_keep_count_deletes_the_oldest_beyond_n_and_counts_busy_and_newest():
    entries = [_entry(f"r{i}", 10 - i) for i in range(6)]  # r0 oldest, r5 newest
    assert [d.name for d in plan_retention(entries, NOW, None, None, keep_count=2)] == ["r0", "r1", "r2", "r3"]
    assert all("beyond the newest 2" in d.reason for d in plan_retention(entries, NOW, None, None, keep_count=2))
    busy = [_entry("r0", 10, busy=True)] + entries[1:]
    plan = [d.name for d in plan_retention(busy, NOW, None, None, keep_count=2)]
    assert plan == ["r1", "r2", "r3", "r4"]  # r0 is being written: kept, and it takes one of the two places
    assert plan_retention(entries, NOW, None, None, keep_count=1) and "r5" not in [
        d.name for d in plan_retention(entries, NOW, None, None, keep_count=1)
    ]


def test_age_then_count_then_size_and_busy_runs_count_towards_the_budget():
    entries = [
        _entry("old", 40, 10),
        _entry("a", 3, 10),
        _entry("b", 2, 10),
        _entry("busy", 1, 50, busy=True),
        _entry("new", 0, 10),
    ]
    plan = plan_retention(entries, NOW, 30, 70, keep_count=4)
    # old: age; nothing by count (4 left: a, b, busy, new); size: 80 > 70 so a goes, busy is never a candidate
    assert [(d.name, d.reason) for d in plan] == [("old", "older than 30 days"), ("a", "over the 0 MiB budget")]


def test_age_text_reads_like_the_option():
    assert [age_text(s) for s in (30 * DAY, DAY, 36 * 3600, 90 * 60, 45)] == [
        "30 days",
        "1 day",
        "36 h",
        "90 min",
        "45 s",
    ]
    assert parse_duration("7d") == 7 * DAY and parse_duration("12h") == 12 * 3600


def _run(base: Path, name: str, started: str, run: dict | None = None, files: dict | None = None) -> Path:
    path = base / name
    path.mkdir(parents=True)
    body = {
        "pmuprof_version": "0.9",
        "started": started,
        "command": ["pmuprof", "watch", "-t", "cpu>1"],
        "trigger": {"condition": "cpu>1"},
    }
    (path / rundir.RUN_JSON).write_text(json.dumps(body if run is None else run))
    (path / rundir.STACKS).write_text("mysqld;main 1\n")
    (path / rundir.PERF_DATA).write_bytes(b"\0" * 4096)
    for fname, text in (files or {}).items():
        (path / fname).write_text(text)
    return path


def test_watch_prunes_only_its_own_captures_oldest_first_one_log_line_each(tmp_path):
    base = tmp_path / "stalk"
    for day in (1, 2, 3, 4):
        _run(base, f"2026110{day}-120000-cpu-gt-1", f"2026-11-0{day}T12:00:00Z")
    _run(
        base,
        "20261102-130000-killed",
        "2026-11-02T13:00:00Z",
        run={"pmuprof_version": "0.9", "started": "2026-11-02T13:00:00Z", "command": ["pmuprof", "watch"]},
    )
    _run(
        base,
        "20261101-090000-capture",
        "2026-11-01T09:00:00Z",  # pmuprof's, but not a watch capture
        run={"pmuprof_version": "0.9", "started": "2026-11-01T09:00:00Z", "command": ["pmuprof", "capture"]},
    )
    _run(base, "20261101-080000-foreign", "2026-11-01T08:00:00Z", run={"started": "2026-11-01T08:00:00Z"})
    (base / "notes").mkdir()
    (base / "notes" / "perf.data").write_text("a user's file in a directory without run.json")
    _run(base, "20261102-140000-mine", "2026-11-02T14:00:00Z", files={"notes.txt": "kept"})
    lines: list[str] = []
    apply_retention(base, Retention(count=2, age_s=None, bytes=None), lines.append)
    assert sorted(os.listdir(base)) == [
        "20261101-080000-foreign",
        "20261101-090000-capture",
        "20261102-140000-mine",
        "20261103-120000-cpu-gt-1",
        "20261104-120000-cpu-gt-1",
        "notes",
    ]
    assert os.listdir(base / "20261102-140000-mine") == ["notes.txt"]  # pmuprof's files went, the user's stayed
    assert (base / "20261101-090000-capture" / rundir.PERF_DATA).is_file()
    assert (base / "20261101-080000-foreign" / rundir.PERF_DATA).is_file()
    assert (base / "notes" / "perf.data").read_text().startswith("a user's")
    assert len(lines) == 4 and all(ln.startswith(f"retention: deleted {base}/") for ln in lines), lines
    assert lines[0].startswith(f"retention: deleted {base}/20261101-120000-cpu-gt-1 (beyond the newest 2")
    assert lines[-1].endswith("kept foreign files notes.txt")


def test_a_capture_being_written_is_never_pruned(tmp_path):
    """Busy: the room file is there and a live perf holds perf.data open. A SIGKILLed capture leaves the room
    file (and a fresh run.json) but no perf: it is pruned like any run."""
    base = tmp_path / "stalk"
    old = _run(base, "20200101-000000-cpu-gt-1", "2020-01-01T00:00:00Z", files={rundir.ROOM: ""})
    killed = _run(base, "20200102-000000-cpu-gt-1", "2020-01-02T00:00:00Z", files={rundir.ROOM: ""})
    _run(base, "20261101-000000-cpu-gt-1", "2026-11-01T00:00:00Z")
    _run(base, "20261102-000000-cpu-gt-1", "2026-11-02T00:00:00Z")
    fake_perf = tmp_path / "perf"  # a process named perf with the capture's perf.data open
    shutil.copy(shutil.which("sleep"), fake_perf)
    with open(old / rundir.PERF_DATA, "rb") as held:
        writer = subprocess.Popen([str(fake_perf), "60"], stdin=held)
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(f"/proc/{writer.pid}/fd/0") and time.monotonic() < deadline:
            time.sleep(0.05)
        lines: list[str] = []
        apply_retention(base, Retention(count=1, age_s=DAY, bytes=1), lines.append)
    finally:
        writer.kill()
        writer.wait()
    assert old.is_dir() and (old / rundir.PERF_DATA).is_file()
    assert not killed.exists() and not (base / "20261101-000000-cpu-gt-1").exists()
    assert (base / "20261102-000000-cpu-gt-1" / rundir.PERF_DATA).is_file()  # the newest, whatever the budget


def test_retention_off_deletes_nothing_and_a_failure_does_not_stop_the_watch(tmp_path):
    base = tmp_path / "stalk"
    _run(base, "a", "2020-01-01T00:00:00Z")
    _run(base, "b", "2020-01-02T00:00:00Z")
    lines: list[str] = []
    apply_retention(base, Retention(None, None, None), lines.append)
    assert sorted(os.listdir(base)) == ["a", "b"] and lines == []
    apply_retention(tmp_path / "missing", Retention(), lines.append)
    assert lines and lines[0].startswith("retention skipped:")
    assert Retention().text() == "keeping at most 20 captures, 30 days, 2 GiB"


def test_made_by_watch_needs_the_marker_and_watch():
    assert made_by_watch({"pmuprof_version": "1", "trigger": {"condition": "x>1"}})
    assert made_by_watch({"pmuprof_version": "1", "command": ["pmuprof", "watch", "-t", "x>1"]})
    assert not made_by_watch({"pmuprof_version": "1", "command": ["pmuprof", "capture"]})
    assert not made_by_watch({"trigger": {"condition": "x>1"}}) and not made_by_watch(None)


def test_poll_table_round_trips_and_keeps_before_and_during_apart(tmp_path):
    conds = (parse_condition("Threads_running>50"), parse_condition("state:Sending data>=5"))
    before = tuple(
        Poll(
            NOW + i,
            status={"Threads_running": 40.0 + 10 * i},
            states={"Sending data": i},
            cpu=150.5,
            load1=3.5,
            running=7,
            blocked=1,
        )
        for i in range(3)
    )
    during = (Poll(NOW + 4, status={"Threads_running": 70.0}),)
    table = poll_table(conds, before, during)
    path = tmp_path / rundir.WATCH_POLLS
    write_tsv(path, table)
    lines = path.read_text().splitlines()
    assert lines[0].split("\t") == list(FIXED) + ["Threads_running>50", "state:Sending data>=5"]
    assert lines[1].split("\t")[1:] == ["before", "3.5", "7", "1", "150.5", "40", "0"]
    assert lines[-1].split("\t")[1:] == ["during", "", "", "", "", "70", "0"]  # what that poll did not have: empty
    back = read_tsv(path)
    assert back.conditions == table.conditions and [r.phase for r in back.rows] == ["before"] * 3 + ["during"]
    assert back.rows[2].values == (60.0, 2.0) and back.rows[0].running == 7
    assert abs(back.rows[0].t - NOW) < 0.001
    assert rundir.WATCH_POLLS in rundir.RUN_FILES  # retention deletes it with the run


def test_a_damaged_poll_table_is_one_input_error(tmp_path):
    path = tmp_path / rundir.WATCH_POLLS
    path.write_text("time\tphase\n")
    with pytest.raises(InputError, match="not a pmuprof watch-polls table"):
        read_tsv(path)
    path.write_text("\t".join(FIXED + ("x>1",)) + "\n2026-11-28T12:00:00.000Z\tbefore\t1\t2\n")
    with pytest.raises(InputError, match="line 2"):
        read_tsv(path)
    with pytest.raises(ValueError):
        WatchPolls(("x>1",), (PollRow(0.0, "after", values=(1.0,)),))

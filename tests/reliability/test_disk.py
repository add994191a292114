"""Item 5: a filesystem that fills during a capture (another process writes to it) stops perf at
pmuprof's reserve; the perf.data stays readable, the report is written, and the exit status is 6."""

from __future__ import annotations

import json
import os
import subprocess
import time

from .conftest import finish, one_line, spawn_cli, wait_window

from pmuprof.paths import perf_path


def _fill(where, leave: int) -> None:
    """Another writer takes all but ``leave`` bytes of the filesystem (or all of it: leave=0)."""
    st = os.statvfs(where)
    size = max(0, st.f_bavail * st.f_frsize - leave)
    with open(where / "filler", "wb") as fh:
        try:
            while size > 0:
                size -= fh.write(b"\0" * min(size, 1 << 20)) if leave else fh.write(b"\0" * (1 << 20))
                fh.flush()
        except OSError:
            pass


def _readable(perf_data) -> bool:
    res = subprocess.run([perf_path(), "evlist", "-i", str(perf_data)], capture_output=True, text=True, timeout=60)
    return res.returncode == 0 and res.stdout.strip() != ""


def test_disk_filling_up_stops_perf_at_the_reserve_and_exits_6(busy, tmpfs):
    fs = tmpfs(48)  # reserve: 16 MiB (the minimum)
    out = fs / "run"
    proc = spawn_cli("capture", "-p", busy.pid, "-d", "30", "-o", out, "--no-mysql")
    wait_window(out, proc)
    time.sleep(1)
    _fill(fs, 8 << 20)
    res = finish(proc)
    one_line(res, 6, "to keep the disk from filling", "below the 16 MiB pmuprof keeps free", "report.html")
    assert _readable(out / "perf.data")
    assert "hot_leaf" in (out / "stacks.folded").read_text() and (out / "report.html").is_file()
    run = json.loads((out / "run.json").read_text())
    assert run["stopped_by"] == "disk" and run["duration_s"] < 30  # the disk, not the 30 s clock, ended it


def test_disk_full_to_the_last_block_is_one_line_exit_6(busy, tmpfs):
    fs = tmpfs(48)
    out = fs / "run"
    proc = spawn_cli("capture", "-p", busy.pid, "-d", "30", "-o", out, "--no-mysql")
    wait_window(out, proc)
    time.sleep(0.5)
    _fill(fs, 0)
    res = finish(proc)
    one_line(res, 6)
    assert _readable(out / "perf.data") and (out / "run.json").is_file()


def test_refusal_explains_the_reserve(busy, pmuprof, tmpfs):
    fs = tmpfs(20)
    res = pmuprof("capture", "-p", busy.pid, "-d", "30", "-o", fs / "run", "--no-mysql")
    one_line(res, 6, "MiB free; this capture needs about", "pmuprof keeps 16 MiB free", "so the disk never fills")
    assert not (fs / "run").exists()


def test_disk_full_mid_capture_finalises_run_json_and_stays_reportable(busy, tmpfs, pmuprof):
    fs = tmpfs(48)
    out = fs / "run"
    proc = spawn_cli("capture", "-p", busy.pid, "-d", "30", "-o", out, "--no-mysql")
    wait_window(out, proc)
    time.sleep(2)  # samples written
    _fill(fs, 0)
    res = finish(proc)
    one_line(res, 6)
    run = json.loads((out / "run.json").read_text())
    assert run["stopped_by"] == "disk" and run["duration_s"] is not None and run["duration_s"] < 30, run
    assert not (out / ".pmuprof-room").exists()  # the room kept for the last files is given back
    (fs / "filler").unlink()
    again = pmuprof("report", out)
    assert again.code == 0, again.err
    assert (out / "report.html").is_file() and "perf script failed" not in again.err
    assert "hot_leaf" in (out / "stacks.folded").read_text()  # perf's last buffers went into the room

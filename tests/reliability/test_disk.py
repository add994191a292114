"""Item 5: a filesystem that fills during a capture (another process writes to it) stops perf at
pmuprof's reserve; the perf.data stays readable, the report is written, and the exit status is 6."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from .conftest import DUTY_C, finish, one_line, spawn_cli, wait_for, wait_window

from pmuprof.capture.offcpu import tracer
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


@pytest.fixture
def big_binary(tmp_path):
    """The suite's duty-cycle program with 24 MiB of random bytes in a section of its own: its copy in
    binaries.tar.gz (kept for a report elsewhere) is larger than the room a capture holds."""
    src, exe, blob = tmp_path / "duty.c", tmp_path / "pmuprof-big", tmp_path / "blob"
    src.write_text(DUTY_C)
    subprocess.run(["gcc", "-O1", "-fno-omit-frame-pointer", "-o", str(exe), str(src)], check=True)
    blob.write_bytes(os.urandom(24 << 20))
    subprocess.run(["objcopy", "--add-section", f".blob={blob}", str(exe)], check=True)
    proc = subprocess.Popen([str(exe)])
    yield proc
    proc.kill()
    proc.wait()


def test_disk_full_during_an_off_cpu_capture_still_finalises_run_json(big_binary, tmpfs, pmuprof):
    """The disk fills while perf, perf stat and the off-CPU tracer write: the tracer's stacks, run.json and
    counters.json go in the room kept for them (the copies for a report elsewhere are not made: they would
    take it), and the run directory reports once space is freed."""
    if tracer.unavailable([big_binary.pid])[0]:
        pytest.skip(f"the off-CPU tracer does not run here: {tracer.unavailable([big_binary.pid])[0]}")
    fs = tmpfs(64)
    out = fs / "run"
    proc = spawn_cli("capture", "-p", big_binary.pid, "-d", "30", "-o", out, "--no-mysql", "--off-cpu")
    wait_for(out / "perf.data", proc=proc)
    time.sleep(2)
    _fill(fs, 0)
    res = finish(proc, timeout=300)
    one_line(res, 6)
    run = json.loads((out / "run.json").read_text())
    assert run["stopped_by"] == "disk" and run["duration_s"] < 30, run
    assert run["offcpu"]["recorded"], run["offcpu"]
    assert any("binaries.tar.gz not kept: the disk was full" in w for w in run["warnings"]), run["warnings"]
    assert not (out / "binaries.tar.gz").exists() and (out / "counters.json").is_file()
    (fs / "filler").unlink()
    again = pmuprof("report", out)
    assert again.code == 0, again.err
    assert "off-cpu:" in (out / "offcpu.folded").read_text() and (out / "report.html").is_file()

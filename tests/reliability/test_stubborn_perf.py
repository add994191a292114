"""Issue 26 item 2 (item 4 of the sweep): a perf record that ignores SIGINT and SIGTERM and keeps forking
busy children (whose CPU is not perf's work) ends in bounded time: SIGKILL after the grace period,
one line, and nothing of it or of perf stat left running."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

from .conftest import finish, one_line, spawn_cli
from helpers import need_perf

STUBBORN = """#!/bin/sh
echo "$$ $1" >> "{log}"
case "$1" in record) ;; *) exec {perf} "$@";; esac
trap '' INT TERM HUP
while :; do  # never opens its control FIFO nor writes perf.data; its children burn a little CPU
    sh -c 'i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done'
    sleep 0.1
done
"""


def _started(log: Path) -> list[list[str]]:
    """(pid, subcommand) of every perf the capture started (each leads its own session)."""
    return [line.split() for line in log.read_text().splitlines()] if log.exists() else []


def _session_members(sids: set[int]) -> list[str]:
    """Processes still running in any of these sessions (field 6 of /proc/PID/stat)."""
    left = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry.name}/stat").read_bytes().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) in sids and fields[0] != b"Z":  # a zombie waits for its reaper, it does not run
            left.append(f"{entry.name} ({Path(f'/proc/{entry.name}/cmdline').read_bytes()[:80]!r})")
    return left


def test_a_perf_ignoring_int_and_term_is_killed_and_nothing_is_left(busy, tmp_path):
    log = tmp_path / "perf.log"
    fake = tmp_path / "perf"
    fake.write_text(STUBBORN.format(log=log, perf=need_perf()))
    fake.chmod(0o755)
    t0 = time.monotonic()
    proc = spawn_cli(
        "capture",
        "-p",
        busy.pid,
        "-d",
        "2",
        "-o",
        tmp_path / "run",
        "--no-mysql",
        env={"PMUPROF_PERF": str(fake), "PMUPROF_STALL_S": "2", "PMUPROF_PERFDATA": ""},
    )
    try:
        res = finish(proc, timeout=240)
    except subprocess.TimeoutExpired:  # a failing run must not leave the capture or the fake behind
        proc.kill()
        for pid, _ in _started(log):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(int(pid), signal.SIGKILL)
        raise
    took = time.monotonic() - t0
    one_line(res, 5, "did not start recording")
    # 2 s without perf's own CPU to start, 2 s after SIGINT, 5 s after SIGTERM: far below the 60 s start
    # timeout and the 600 s stop bound that the children's CPU used to stretch it to
    assert took < 50, f"the capture with a stubborn perf took {took:.0f} s"
    started = _started(log)
    assert {name for _, name in started} >= {"record", "stat"}, started
    time.sleep(0.5)
    assert not _session_members({int(pid) for pid, _ in started}), "left running"

"""`pmuprof watch` against a real private MariaDB: a status trigger that becomes true under sysbench
load fires one capture; the cooldown and --max-captures hold; run.json records the trigger.

The trigger counts connections, so the load is paced (LOAD_RATE transactions a second in all): its clients
stay connected and working for as long as the test needs them, without keeping both CPUs busy all along
(unpaced, it cost the suite minutes of CPU time while the watch's capture was reported and cooled down)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pmuprof.capture.mysql.facts import MysqlOptions
from pmuprof.errors import Interrupted
from pmuprof.workflows.watch import WatchOptions, watch
from pmuprof.model.rundir import RUN_JSON, WATCH_POLLS, read_json
from pmuprof.model.watchpolls import read_tsv
from pmuprof.paths import perf_path
from pmuprof.workflows.triggers import DiskFloor, WatchPlan, parse_condition
from tests import mariadb as mdb

CONDITION = "Threads_connected>=6"  # idle: the poller alone; under 8 sysbench threads: 9+
LOAD_THREADS = 8
LOAD_RATE = 40  # transactions a second, all clients together


@pytest.fixture(autouse=True)
def _needs_perf():
    if not perf_path():
        pytest.skip("perf not installed (apt-get install linux-perf)")
    if os.geteuid() != 0:
        pytest.skip("per-CPU perf record of another user's process needs root here")


def _wait_for(predicate, timeout: float, what: str, log: Path | None = None) -> None:
    """Until ``predicate()``; ``timeout`` is a hang detector (a loaded host is slow), never the pass condition."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}" + (f"; log:\n{log.read_text()}" if log else ""))


def _runs(base: Path) -> list[Path]:
    return sorted(p for p in base.iterdir() if (p / RUN_JSON).is_file()) if base.is_dir() else []


def _values(polls: list[dict]) -> list[float]:
    return [p["values"][CONDITION] for p in polls]


def test_cli_fires_once_under_load_and_cooldown_holds(mariadb: mdb.MariaDB, tmp_path: Path) -> None:
    base = tmp_path / "watch"
    argv = [
        sys.executable,
        "-m",
        "pmuprof",
        "watch",
        "-p",
        str(mariadb.pid),
        "--trigger",
        CONDITION,
        "--cycles",
        "2",
        "--interval",
        "0.5s",
        "-d",
        "2",
        "--cooldown",
        "3600",  # longer than any capture on a loaded host: no second capture before the test stops it
        "--max-captures",
        "3",
        "--defaults-file",
        str(mariadb.defaults_file),
        "-o",
        str(base),
        "-v",
    ]
    olds = [base / f"2020010{d}-000000-killed" for d in (1, 2)]  # watch's, past 30 days: the first goes at start,
    for day, old in enumerate(olds, start=1):  # the second (the newest, kept) after the capture
        old.mkdir(parents=True)
        (old / RUN_JSON).write_text(
            f'{{"pmuprof_version": "0.9", "started": "2020-01-0{day}T00:00:00Z", "command": ["pmuprof", "watch"]}}'
        )
    log = tmp_path / "watch.log"
    with open(log, "w") as out:
        env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path, env=env)
    load = None
    try:
        # idle polls first: the condition is false until the load connects
        _wait_for(lambda: log.read_text().count("(0/2)") >= 2, 600, "idle polls", log)
        assert _runs(base) == olds[1:]
        load = mdb.SysbenchLoad(mariadb, mdb.UNTIL_STOPPED, test="oltp_read_only", threads=LOAD_THREADS, rate=LOAD_RATE)
        _wait_for(
            lambda: any("trigger" in (read_json(r / RUN_JSON) or {}) for r in _runs(base)),
            900,
            "the capture to finish",
            log,
        )
        # a loaded host (or off-CPU stacks, on by default) can keep the capture busy past its report line
        _wait_for(lambda: log.read_text().count("cooling down") >= 4, 600, "polls during the cooldown", log)
        assert load.proc.poll() is None, "the load must still run: the condition still holds"
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        if load:
            load.stop()
    text = log.read_text()
    assert proc.returncode == 130, text  # docs/usage.md exit codes: stopped by Ctrl-C
    runs = _runs(base)
    assert len(runs) == 1, text  # in the cooldown the still-true condition fired no second capture
    assert runs[0].name.endswith("-Threads_connected-ge-6")
    trig = read_json(runs[0] / RUN_JSON)["trigger"]
    assert trig["condition"] == CONDITION and trig["cycles"] == 2 and trig["consecutive_hits"] == 2
    before = _values(trig["polls_before"])
    assert min(before) < 6 <= before[-1] and before[-2] >= 6, before  # became true under load, 2 polls in a row
    assert trig["polls_during"] and min(_values(trig["polls_during"])) >= 6
    assert "1 capture(s)" in text
    for old in olds:
        assert f"retention: deleted {old} (older than 30 days" in text and not old.exists()
    assert text.index(str(olds[1])) > text.index("report: ")  # deleted after the capture, not before it
    table = read_tsv(runs[0] / WATCH_POLLS)  # the lead-up: idle polls, then the load's
    lead = [r.values[0] for r in table.rows if r.phase == "before"]
    assert min(lead[-2:]) >= 6 and (min(lead) < 6 or len(lead) == 60), lead  # bounded: 60 polls at most
    assert all(r.load1 is not None and r.running is not None for r in table.rows)
    assert [r.values[0] for r in table.rows if r.phase == "during"] == _values(trig["polls_during"])


def test_max_captures_ends_the_watch(mariadb: mdb.MariaDB, tmp_path: Path) -> None:
    """No cooldown, the condition keeps holding: the watch still stops by itself at the cap."""
    plan = WatchPlan((parse_condition(CONDITION),), cycles=2, cooldown_s=0.0, max_captures=1)
    opts = WatchOptions(
        pids=(mariadb.pid,),
        plan=plan,
        base_dir=tmp_path / "w",
        interval_s=0.5,
        duration_s=1.0,
        disk_floor=DiskFloor(bytes=2**20),
        mysql_options=MysqlOptions(defaults_file=str(mariadb.defaults_file)),
        record={"mysql": False},
    )
    lines: list[str] = []
    load = mdb.SysbenchLoad(mariadb, mdb.UNTIL_STOPPED, test="oltp_read_only", threads=LOAD_THREADS, rate=LOAD_RATE)
    try:
        mdb.wait_connected(mariadb, 6)  # loaded from the watch's first poll on (a loaded host connects slowly)
        runs = watch(opts, lines.append)  # returns by itself once the cap is reached
        assert load.proc.poll() is None, "the condition held all along"
    finally:
        load.stop()
    assert len(runs) == 1 and runs == _runs(tmp_path / "w"), lines
    trig = read_json(runs[0] / RUN_JSON)["trigger"]
    assert trig["capture_index"] == 1 and trig["max_captures"] == 1
    assert min(_values(trig["polls_before"])) >= 6  # loaded from the first poll: fired after exactly 2 polls
    assert len(trig["polls_before"]) == 2


def test_disk_floor_skips_the_capture(mariadb: mdb.MariaDB, tmp_path: Path) -> None:
    """A floor above the disk's size: the trigger fires, nothing is captured, the watch still ends."""
    plan = WatchPlan((parse_condition("Uptime>0"),), cycles=1, cooldown_s=0.0, max_captures=1)
    opts = WatchOptions(
        pids=(mariadb.pid,),
        plan=plan,
        base_dir=tmp_path / "w",
        interval_s=0.2,
        duration_s=1,
        disk_floor=DiskFloor(bytes=2**62),
        mysql_options=MysqlOptions(defaults_file=str(mariadb.defaults_file)),
    )
    lines: list[str] = []

    def stop_after_three(_s: float, calls=[0]) -> None:  # noqa: B006 - a counter local to this test
        calls[0] += 1
        if calls[0] >= 3:
            raise KeyboardInterrupt

    with pytest.raises(Interrupted) as stopped:
        watch(opts, lines.append, sleep=stop_after_three)
    assert stopped.value.exit_code == 130 and lines[-1].startswith("0 capture(s): none; ")
    assert int(lines[-1].split("; ")[1].split()[0]) >= 2, lines  # every fire was skipped and counted
    assert sum("capture skipped" in line for line in lines) == 1, lines  # and said once (issue 34)
    assert _runs(tmp_path / "w") == []

"""`pmuprof watch` as a long-running service, end to end with the fake perf: retention of its own captures
at start and after each capture (one log line per deletion, foreign entries untouched) and the lead-up
table (watch-polls.tsv) beside the capture."""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path

from helpers import FAKE_PERF, run_cli
from pmuprof.model import rundir
from pmuprof.model.watchpolls import read_tsv


def _iso(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _fake_run(base: Path, name: str, started: float, command: str = "watch") -> Path:
    run = base / name
    run.mkdir(parents=True)
    (run / rundir.RUN_JSON).write_text(
        json.dumps({"pmuprof_version": "0.9", "started": _iso(started), "command": ["pmuprof", command, "-t", "cpu>1"]})
    )
    (run / rundir.PERF_DATA).write_bytes(b"\0" * 8192)
    return run


def test_watch_prunes_its_old_captures_and_keeps_the_lead_up_beside_the_new_one(target, tmp_path):
    base, day = tmp_path / "stalk", 86400
    now = time.time()
    _fake_run(base, "20200101-000000-cpu-gt-1", now - 900 * day)
    _fake_run(base, "20200102-000000-cpu-gt-1", now - 899 * day)
    _fake_run(base, "20200103-000000-manual", now - 898 * day, command="capture")  # not watch's: kept
    (base / "incident-notes").mkdir()
    (base / "incident-notes" / "perf.data").write_text("the DBA's copy")  # no run.json: kept
    two_days = _fake_run(base, "recent-2d", now - 2 * day)
    one_day = _fake_run(base, "recent-1d", now - day)
    res = run_cli(
        "watch",
        "-p",
        str(target.pid),
        "-t",
        "cpu>=0",
        "--cycles",
        "3",
        "--interval",
        "200ms",
        "-d",
        "1s",
        "--max-captures",
        "1",
        "--no-mysql",
        "-o",
        str(base),
        "--keep",
        "2",
        env=FAKE_PERF,
    )
    assert res.returncode == 0, res.stderr
    deleted = [ln for ln in res.stderr.splitlines() if "retention: deleted" in ln]
    assert len(deleted) == 3, res.stderr
    assert "20200101-000000-cpu-gt-1 (older than 30 days" in deleted[0] and "20200102" in deleted[1]
    assert "recent-2d (beyond the newest 2" in deleted[2]
    assert res.stderr.index(deleted[1]) < res.stderr.index("trigger cpu>=0 held") < res.stderr.index(deleted[2])
    assert "keeping at most 2 captures, 30 days, 2 GiB" in res.stderr
    assert not two_days.exists() and one_day.is_dir()
    assert (base / "20200103-000000-manual" / rundir.PERF_DATA).is_file()
    assert (base / "incident-notes" / "perf.data").read_text() == "the DBA's copy"
    new = [p for p in base.iterdir() if p.name.endswith("-cpu-ge-0")]
    assert len(new) == 1 and (new[0] / "report.html").is_file()
    table = read_tsv(new[0] / rundir.WATCH_POLLS)
    before = [r for r in table.rows if r.phase == "before"]
    during = [r for r in table.rows if r.phase == "during"]
    assert table.conditions == ("cpu>=0",) and len(before) == 4 and during  # 1 + 3 polls to fire, 1 s of capture
    assert all(r.load1 is not None and r.running is not None and r.running >= 1 for r in table.rows)
    assert before[0].values == (None,) and before[-1].values[0] is not None  # the first poll has no CPU % yet
    assert [r.t for r in table.rows] == sorted(r.t for r in table.rows)

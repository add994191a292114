"""One pipeline for every input: a report of a capture's perf.data, or of its perf script text, says
what the live capture said (findings, unnamed-function labels, skid hot spots) — demo workload and
Debian's stripped mariadbd, system-wide (per-CPU) and per-process."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from helpers import capture_under, demo_cli, need_perf, run_cli
import mariadb as mdb

SCRIPT_WITH_PIDS = "comm,pid,tid,time,ip,sym,symoff,dso"  # a common -F choice; the default has no pid


def _report(src: Path, out: Path, *extra: str) -> dict:
    res = run_cli("report", str(src), "-o", str(out), *extra)
    assert res.returncode == 0, res.stderr
    return _facts(out)


def _facts(out: Path) -> dict:
    doc = json.loads((out / "findings.json").read_text())
    findings, skid = doc["findings"], doc["profile"]["skid"] or {}
    html = (out / "report.html").read_text()
    return {
        "findings": {(f["rule"], f["severity"], round(f["share"], 3)) for f in findings},
        "hot": {(f["symbol"], f["samples"], f["moved"]) for f in skid.get("functions", [])},
        "unnamed": {line.split("]")[0] + "]" for line in html.split("[mariadbd+0x")[1:]},
        "html": html,
    }


def _script(data: Path, out: Path, fields: str | None) -> Path:
    argv = ["perf", "script", "-i", str(data)] + (["-F", fields] if fields else [])
    with open(out, "w") as fh:
        subprocess.run(argv, stdout=fh, stderr=subprocess.DEVNULL, check=True, timeout=300)
    return out


def _same(live: dict, other: dict, what: str) -> None:
    assert other["findings"] == live["findings"], what
    assert other["unnamed"] == live["unnamed"], what
    assert other["hot"] == live["hot"], what


def test_demo_capture_perf_data_and_script_text_agree(tmp_path: Path) -> None:
    need_perf()
    run = tmp_path / "run"
    res = demo_cli(run, "--scenario", "mixed", "-d", "3", "-q")
    assert res.returncode == 0, res.stderr
    live = _facts(run)
    assert live["findings"], "the mixed demo fires rules"
    _same(live, _report(run / "perf.data", tmp_path / "from-data"), "perf.data inside the run directory")
    text = _script(run / "perf.data", run / "script.txt", SCRIPT_WITH_PIDS)  # beside run.json: same targets
    _same(live, _report(text, tmp_path / "from-text"), "its perf script text")
    assert {"ut_delay", "os_rmb"} & {h[0] for h in live["hot"]}, "skid hot spots of the live run"


def _loaded_capture(server: mdb.MariaDB, out: Path, *extra: str) -> None:
    load = mdb.SysbenchLoad(server, mdb.UNTIL_STOPPED, test="oltp_write_only", threads=8)
    try:
        load.connected()
        # on-CPU only: off-CPU stacks (on by default where cheap) are in no perf.data or perf script text
        res = capture_under(
            load,
            str(out),
            "-p",
            str(server.pid),
            "-d",
            "5",
            "-F",
            "199",
            "--no-off-cpu",
            "--defaults-file",
            str(server.defaults_file),
            *extra,
        )
    finally:
        load.stop()
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("mode", ["per-cpu", "per-thread"])
def test_stripped_mariadbd_perf_data_and_script_text_agree(mariadb, tmp_path: Path, mode: str) -> None:
    """The bare perf.data and its text, with no run.json beside them, still group InnoDB's unnamed code."""
    need_perf()
    run = tmp_path / "run"
    _loaded_capture(mariadb, run, "--mode", mode)
    live = _facts(run)
    assert live["unnamed"], "Debian's mariadbd has no InnoDB symbols: its code is grouped by function"
    assert live["hot"], "skid hot spots of the live run"
    _same(live, _report(run / "perf.data", tmp_path / "in-run"), "perf.data inside the run directory")
    _same(
        live,
        _report(_script(run / "perf.data", run / "script.txt", SCRIPT_WITH_PIDS), tmp_path / "in-run-text"),
        "its perf script text inside the run directory",
    )
    bare = tmp_path / "elsewhere"
    bare.mkdir()
    data = bare / "perf.data"
    data.write_bytes((run / "perf.data").read_bytes())  # someone else's file: no run.json beside it
    from_data = _report(data, tmp_path / "from-data", "--pid", str(mariadb.pid))
    assert from_data["unnamed"] == live["unnamed"] and from_data["hot"] == live["hot"]
    text = _script(data, bare / "script.txt", SCRIPT_WITH_PIDS)
    from_text = _report(text, tmp_path / "from-text", "--pid", str(mariadb.pid))
    assert from_text["unnamed"] == live["unnamed"] and from_text["hot"] == live["hot"]
    assert from_text["findings"] == from_data["findings"]
    assert "not verified" in from_text["html"], "a perf script text has no build-ids: the report says so"

"""The capture → run directory → report path with a fake perf (tests/fakeperf): no root, no PMU, no
real perf needed, so the record/report contract is exercised on any laptop in a second or two."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import FAKE_PERF, cli, run_cli


def test_capture_writes_the_contract_and_the_report(target, tmp_path: Path) -> None:
    out = tmp_path / "run"
    res = cli("capture", "-p", str(target.pid), "-d", "1", "--no-mysql", "-q", "-o", str(out), env=FAKE_PERF)
    assert res.returncode == 0, res.stderr
    for name in (
        "run.json",
        "perf.data",
        "counters.json",
        "stacks.folded",
        "leaves.tsv",
        "analysis.json",
        "report.html",
        "findings.json",
        "report.md",
    ):
        assert (out / name).is_file(), name
    run = json.loads((out / "run.json").read_text())
    assert run["schema"] == 2 and run["targets"][0]["pid"] == target.pid
    assert run["record"]["event_recorded"] == "cpu-clock" and run["record"]["samples_total"] == 2011
    assert run["record"]["argv"][0].endswith("fakeperf/perf")
    analysis = json.loads((out / "analysis.json").read_text())
    assert analysis["processes"][0]["pid"] == target.pid and analysis["processes"][0]["samples"] == 257
    assert any("not found here" in w for w in analysis["warnings"]), "the canned binary is nowhere on this host"
    rules = {f["rule"] for f in json.loads((out / "findings.json").read_text())["findings"]}
    assert {"innodb-spin-wait", "fil-space-get-index-dive"} <= rules


def test_record_then_report_gives_what_capture_gives(target, tmp_path: Path) -> None:
    rec = cli(
        "record", "-p", str(target.pid), "-d", "1", "--no-mysql", "-q", "-o", str(tmp_path / "rec"), env=FAKE_PERF
    )
    assert rec.returncode == 0, rec.stderr
    assert not (tmp_path / "rec" / "report.html").exists(), "record writes no report"
    rep = cli("report", str(tmp_path / "rec"), env=FAKE_PERF)
    assert rep.returncode == 0, rep.stderr
    again = cli("report", str(tmp_path / "rec" / "perf.data"), "-o", str(tmp_path / "again"), env=FAKE_PERF)
    assert again.returncode == 0, again.stderr
    one, two = (
        json.loads((d / "findings.json").read_text())["findings"] for d in (tmp_path / "rec", tmp_path / "again")
    )
    assert [(f["rule"], f["severity"], f["share"]) for f in one] == [
        (f["rule"], f["severity"], f["share"]) for f in two
    ]


def test_perf_refusing_to_record_is_one_line_and_exit_5(target, tmp_path: Path) -> None:
    res = run_cli(
        "capture",
        "-p",
        str(target.pid),
        "-d",
        "1",
        "--no-mysql",
        "-q",
        "-o",
        str(tmp_path / "r"),
        env={**FAKE_PERF, "FAKEPERF_MODE": "fail-record"},
    )
    assert res.returncode == 5, res.stderr
    errors = [line for line in res.stderr.splitlines() if line.startswith("pmuprof: error:")]
    assert len(errors) == 1 and "perf_event_paranoid" in errors[0] and "Traceback" not in res.stderr

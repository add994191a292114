"""Issue 6 on live captures: diff of demo runs at spin_wait_delay 30 vs 6, and pprof reading a demo export."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from helpers import demo_cli, need_perf, run_cli


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    need_perf()
    base = tmp_path_factory.mktemp("demo-diff")
    for delay in (30, 6):
        res = demo_cli(base / f"d{delay}", "--scenario", "index-dive", "--spin-wait-delay", str(delay), "-d", "3", "-q")
        assert res.returncode == 0, res.stderr
    return base


def test_diff_shows_ut_delay_shrinking(captures):
    res = run_cli("diff", str(captures / "d30"), str(captures / "d6"), "--json")
    assert res.returncode == 0, res.stderr
    rows = {row["name"]: row for row in json.loads(res.stdout)["self"]}
    assert rows["ut_delay"]["self_delta"] < 0, rows["ut_delay"]
    assert rows["ut_delay"]["self_before"] > rows["ut_delay"]["self_after"]


def test_pprof_reads_the_export_with_the_same_total(captures, tmp_path):
    from tests_pprof import pprof_tool  # skips with the reason when Go's pprof is absent

    tool = pprof_tool()
    out = tmp_path / "d30.pb.gz"
    res = run_cli("export", str(captures / "d30"), "--format", "pprof", "-o", str(out))
    assert res.returncode == 0, res.stderr
    total = json.loads(run_cli("report", str(captures / "d30"), "--json").stdout)["profile"]["samples"]
    top = subprocess.run(
        [tool, "-top", "-symbolize=none", "-sample_index=samples", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert top.returncode == 0, top.stderr
    assert re.search(rf"Total samples = {total}\b", top.stdout), top.stdout[:500]
    assert "ut_delay" in top.stdout
    cpu = subprocess.run([tool, "-top", "-symbolize=none", str(out)], capture_output=True, text=True, timeout=120)
    assert "Type: cpu" in cpu.stdout, cpu.stdout[:500]  # CPU time is the default sample type

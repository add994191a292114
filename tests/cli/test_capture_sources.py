"""The capture-source protocol: a per-second source defined in this file and added to the registry is run by
record() beside perf (through the fake perf), listed in run.json, kept in series.json on the capture's
clock, drawn under the report's seconds strip and read by a rule by name, with no other file changed
(docs/internals.md, "A new capture source")."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers import FAKE_PERF
from pmuprof.capture import sources
from pmuprof.capture.lifecycle import Context, Part, Source
from pmuprof.capture.persecond import Measure, PerSecond
from pmuprof.capture.record import RecordOptions, record
from pmuprof.errors import PmuprofError
from pmuprof.findings.loader import load_rule
from pmuprof.model import rundir
from pmuprof.pipeline import report_input, report_run


class TargetRss(PerSecond):
    """What a new source's module holds: its name, its measures, one reading and its values."""

    name = "target"
    measures = (Measure("target.rss", "bytes", "the first target's resident memory (VmRSS)", show=True),)

    def __init__(self, pid: int) -> None:
        super().__init__()
        self.path = Path(f"/proc/{pid}/status")

    @classmethod
    def of(cls, ctx: Context) -> TargetRss:
        return cls(ctx.pids[0])

    def read(self) -> str:
        return self.path.read_text()

    def keep(self, second: int, reading: str) -> dict[str, float | None]:
        kib = next((line.split()[1] for line in reading.splitlines() if line.startswith("VmRSS:")), None)
        return {"target.rss": None if kib is None else float(kib) * 1024}


RULE = """\
id: target-memory
title: The target holds memory
severity: warning
evidence:
  rss:
    series: target.rss
thresholds: {metric: rss, warning: 1048576}
message: "resident {rss.summary}"
doc: {symptom: s, why: w, fix: f, caveats: c}
"""


def _strip(html: Path) -> dict:
    data = re.search(r'<script type="application/json" id="pmuprof-data">(.*?)</script>', html.read_text(), re.S)
    return json.loads(data[1])["seconds"]


def test_a_new_per_second_source_reaches_run_json_the_strip_and_a_rule(target, tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "SOURCES", [*sources.SOURCES, TargetRss.of])
    monkeypatch.setenv("PMUPROF_PERF", FAKE_PERF["PMUPROF_PERF"])
    out = tmp_path / "run"
    record(RecordOptions(pids=(target.pid,), out_dir=out, duration=3, mysql=False, off_cpu=False))

    run = json.loads((out / rundir.RUN_JSON).read_text())
    mine = next(s for s in run["sources"] if s["name"] == "target")
    assert mine == {"name": "target", "files": [], "series": ["target.rss"], "why_not": ""}
    kept = next(s for s in json.loads((out / rundir.SERIES).read_text())["series"] if s["name"] == "target.rss")
    assert kept["source"] == "target" and kept["unit"] == "bytes" and len(kept["values"]) >= 3
    assert all(v > 1 << 20 for v in kept["values"]), kept  # a Python process holds megabytes, every second

    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "target-memory.yaml").write_text(RULE)
    rule = load_rule(tmp_path / "rules" / "target-memory.yaml")
    result = report_run(out, rules=(rule,))
    shown = {r["name"]: r for r in _strip(out / rundir.REPORT_HTML)["series"]}
    strip = _strip(out / rundir.REPORT_HTML)
    last = kept["first"] + len(kept["values"]) - 1
    assert shown["target.rss"]["values"][last - strip["first"]] == kept["values"][-1]
    assert "host.busy" in shown  # the host-load source's, drawn the same way
    (finding,) = json.loads((out / rundir.FINDINGS_JSON).read_text())["findings"]
    evidence = finding["evidence"]["rss"]
    assert finding["rule"] == "target-memory" and evidence["seconds"] == len(kept["values"])
    assert evidence["max"] == max(kept["values"]) and finding["message"].startswith("resident ")
    assert result.diagnosis.findings[0].evidence["rss"].unit == "bytes"

    again = report_input(out, tmp_path / "again")  # a report of the run directory, as on another host
    assert "target.rss" in {r["name"] for r in _strip(again.paths["html"])["series"]}


class Exploding(Source):
    """A source whose stop fails: the others still stop, run.json is still written, the error is raised."""

    name = "exploding"
    cleaned = False

    def stop(self, ctx: Context) -> Part:
        raise OSError("no room for my file")

    def cleanup(self) -> None:
        type(self).cleaned = True


def test_a_failing_stop_still_stops_the_others_and_writes_run_json(target, tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "SOURCES", [lambda ctx: Exploding(), *sources.SOURCES])  # listed first: stops last
    monkeypatch.setenv("PMUPROF_PERF", FAKE_PERF["PMUPROF_PERF"])
    out = tmp_path / "run"
    with pytest.raises(OSError, match="no room for my file"):
        record(RecordOptions(pids=(target.pid,), out_dir=out, duration=1, mysql=False, off_cpu=False))
    run = json.loads((out / rundir.RUN_JSON).read_text())
    assert "exploding: not finished (no room for my file)" in run["warnings"]
    assert run["host_load"] is not None and run["record"]["samples_total"] == 2011  # the others' parts
    assert Exploding.cleaned and not (out / ".perf-ctl").exists() and not (out / rundir.ROOM).exists()


def test_perf_that_cannot_read_its_file_still_leaves_the_windows_facts(target, tmp_path, monkeypatch):
    """perf evlist failing after the window: the error is raised, but run.json has the window (duration,
    samples), counters.json is written and the other sources gave their parts."""
    monkeypatch.setenv("PMUPROF_PERF", FAKE_PERF["PMUPROF_PERF"])
    monkeypatch.setenv("FAKEPERF_MODE", "fail-evlist")
    out = tmp_path / "run"
    with pytest.raises(PmuprofError, match="perf cannot read this file"):
        record(RecordOptions(pids=(target.pid,), out_dir=out, duration=1, mysql=False, off_cpu=False))
    run = json.loads((out / rundir.RUN_JSON).read_text())
    assert run["duration_s"] > 0.5 and run["record"]["samples_total"] == 2011 and run["host_load"] is not None
    assert (out / rundir.COUNTERS).is_file() and run["record"]["event_recorded"] == ""

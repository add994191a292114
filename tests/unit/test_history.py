"""History index: scanning runs, trend data, regression flags and the self-contained HTML."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from pmuprof.model.counters import CounterValue, Counters
from pmuprof.model.foundfile import FoundFinding
from pmuprof.model.run import Host, Record, Run, Target
from pmuprof.workflows.history import (
    RunSummary,
    build_payload,
    chart,
    judgements,
    latest_flags,
    regressions,
    render_index,
    scan,
)
from pmuprof.workflows.judge import Basis, cpus_sampled, run_basis


def _run(base: Path, name: str, day: int, findings=(), stacks=None, ipc=None, report=True, marker=True, trigger=None):
    path = base / name
    path.mkdir(parents=True)
    run = {
        "started": f"2024-01-{day:02d}T03:00:00Z",
        "targets": [{"pid": 42, "label": "mariadbd"}],
        "record": {"event_recorded": "cpu-clock"},
    }
    if marker:
        run["pmuprof_version"] = "0.1.0"
    if trigger:
        run["trigger"] = {"condition": trigger}
    (path / "run.json").write_text(json.dumps(run))
    (path / "findings.json").write_text(
        json.dumps(
            {
                "findings": [
                    {"rule": r, "severity": sev, "title": f"title of {r}", "share": share} for r, sev, share in findings
                ]
            }
        )
    )
    lines = [f"mariadbd;main;{fn} {n}" for fn, n in (stacks or {"do_work": 100}).items()]
    (path / "stacks.folded").write_text("\n".join(lines) + "\n")
    if ipc is not None:
        (path / "counters.json").write_text(
            json.dumps(
                {"events": [{"event": "cycles", "value": 1000.0}, {"event": "instructions", "value": 1000.0 * ipc}]}
            )
        )
    if report:
        (path / "report.html").write_text("<html></html>")
    return path


UNIT = 1 / (99 * 10.0 * 2)  # one sample at 99 Hz over 10 s on 2 CPUs


def _summary(name, findings=(), functions=(), ipc=None, samples=1000, unit=UNIT):
    """A run of ``samples`` samples; functions as (name, self share); unit None: no time basis."""
    counts = tuple((n, round(x * samples)) for n, x in functions)
    return RunSummary(
        name,
        name,
        "t",
        samples,
        "cpu-clock",
        tuple(FoundFinding(r, s, r, x) for r, s, x in findings),
        tuple(functions),
        ipc,
        basis=Basis(unit, 2, "test"),
        function_samples=counts,
    )


def test_scan_finds_pmuprof_runs_in_order_and_skips_foreign(tmp_path):
    base = tmp_path / "runs"
    _run(base, "20240103", 3, findings=[("innodb-spin-wait", "critical", 0.3)], ipc=0.8)
    _run(base, "20240101", 1, stacks={"ut_delay": 30, "do_work": 70}, report=False)
    _run(base, "foreign", 2, marker=False)
    _run(base / "watch", "20240102-Threads_running-gt-50", 2, trigger="Threads_running>50")
    (base / "empty").mkdir()
    (tmp_path / "elsewhere").mkdir()
    _run(tmp_path / "elsewhere", "linked", 4)
    (base / "link").symlink_to(tmp_path / "elsewhere")
    runs = scan(base)
    assert [r.name for r in runs] == ["20240101", "watch/20240102-Threads_running-gt-50", "20240103"]
    first, watch, last = runs
    assert first.functions[0] == ("do_work", 0.7) and first.report is None
    assert first.target == "mariadbd[42]" and first.samples == 100 and first.event == "cpu-clock"
    assert watch.trigger == "Threads_running>50"
    assert last.top_finding.rule == "innodb-spin-wait" and last.ipc == 0.8
    assert last.report == "./20240103/report.html"


def test_links_are_relative_to_the_index_location(tmp_path):
    base = tmp_path / "runs"
    _run(base, "20240101", 1)
    runs = scan(base, index_dir=tmp_path / "site")
    assert runs[0].report == "./../runs/20240101/report.html"


def test_regression_flags_cpu_growth_new_critical_and_ipc_drop():
    runs = [
        _summary("n1", [("spin", "warning", 0.10)], [("ut_delay", 0.10)], ipc=1.0),
        _summary("n2", [("spin", "warning", 0.12)], [("ut_delay", 0.11)], ipc=1.0),
        _summary("n3", [("spin", "warning", 0.14)], [("ut_delay", 0.12)], ipc=0.95),  # +1 point of 2 CPUs, -5 %: quiet
        _summary("n4", [("spin", "critical", 0.30), ("ahi", "warning", 0.02)], [("ut_delay", 0.40)], ipc=0.7),
    ]
    flags = regressions(runs)
    assert {(f["run"], f["kind"], f["name"]) for f in flags} == {
        ("n4", "finding", "spin"),
        ("n4", "function", "ut_delay"),
        ("n4", "new-critical", "spin"),
        ("n4", "ipc", "IPC"),
    }
    spin = next(f for f in flags if f["kind"] == "finding")
    assert (
        spin["basis"] == "cpu"
        and spin["now"] == pytest.approx(300 * UNIT, abs=1e-6)
        and spin["baseline"] == pytest.approx(120 * UNIT, abs=1e-6)
    )
    assert (
        spin["text"] == "spin: 15.2 % of 2 CPUs vs median 6.1 % of 3 earlier runs (+9.1 points, sampling noise ±2.0)"
    )  # 1.96 × √(120 + 300) / 1,980
    # a run without findings.json (empty capture) is neither flagged nor a baseline
    empty = RunSummary("e", "e", "t", 0, "", complete=False)
    assert regressions([empty, _summary("b", [("x", "info", 0.5)])]) == []
    # a critical seen before is not new
    again = [_summary("a", [("spin", "critical", 0.3)]), _summary("b", [("spin", "critical", 0.3)])]
    assert regressions(again) == []


def test_a_share_that_grows_because_a_fix_removed_other_work_is_no_regression():
    # before: 2,000 samples, 600 of them spinning; after the fix the spin is gone and the same work remains
    before = _summary(
        "before", [("spin", "critical", 0.30)], [("ut_delay", 0.30), ("row_search_mvcc", 0.35)], samples=2000
    )
    after = _summary("after", [], [("ut_delay", 0.05), ("row_search_mvcc", 700 / 1474)], samples=1474)
    judged = judgements([before, after])
    assert regressions([before, after]) == []  # row_search_mvcc's share went 35 % -> 47 %, its CPU time did not move
    assert {(j["kind"], j["name"]) for j in judged if j["direction"] == "improvement"} == {
        ("finding", "spin"),
        ("function", "ut_delay"),
    }


def test_small_changes_and_runs_without_a_time_basis():
    # 100 -> 125 samples of 2,000: +1.3 points of 2 CPUs (noise ±1.5), under 2 points: neither way
    quiet = [
        _summary("a", functions=[("f", 0.05)], samples=2000),
        _summary("b", functions=[("f", 0.0625)], samples=2000),
    ]
    assert judgements(quiet) == []
    # no duration or CPU count: shares, beyond the noise and by 5 points (a new finding at 6 % of 1,000: yes; 4 %: no)
    assert (
        regressions([_summary("a", unit=None), _summary("b", [("x", "info", 0.06)], unit=None)])[0]["basis"] == "share"
    )
    assert regressions([_summary("a", unit=None), _summary("b", [("x", "info", 0.04)], unit=None)]) == []
    assert (
        regressions([_summary("a", unit=None, samples=40), _summary("b", [("x", "info", 0.06)], unit=None, samples=40)])
        == []
    )


def test_basis_from_frequency_duration_cpus_or_the_targets_task_clock():
    run = Run(
        duration_s=10.0,
        mode="per-cpu",
        host=Host(nproc=16),
        record=Record(frequency=99),
        targets=(Target(pid=1, label="mariadbd", cpus_allowed="0-3"),),
    )
    assert run_basis(run, Counters(), 5000).unit == pytest.approx(1 / (99 * 10 * 16))  # -a samples every CPU
    per_thread = replace(run, mode="per-thread")
    assert cpus_sampled(per_thread) == 4 and run_basis(per_thread, None, 5000).text == "99 Hz × 10 s × 4 CPUs"
    clock = Counters(scope="target threads", events=(CounterValue("task-clock", 20000.0, unit="msec"),))
    assert run_basis(per_thread, clock, 5000).unit == pytest.approx(20.0 / 5000 / (10 * 4))
    assert run_basis(replace(run, duration_s=None), None, 5000).unit is None


def test_chart_geometry_scales_into_the_box():
    c = chart("t", ["a", "b", "c"], {"s": [0.0, 0.5, None]}, "share")
    line = c["lines"][0]
    assert len(line["marks"]) == 2  # None is a gap, not a zero
    ys = [m["y"] for m in line["marks"]]
    assert ys[0] == c["height"] - c["pad"] and c["pad"] <= ys[1] < ys[0]
    assert line["marks"][1]["tip"] == "s @ b: 50.0%"


def test_payload_picks_series_and_orders_rows_newest_first():
    runs = [_summary(f"n{i}", [(f"r{j}", "info", 0.01 * (j + 1)) for j in range(8)], ipc=None) for i in range(3)]
    payload = build_payload(runs, "t")
    assert [c["title"] for c in payload["charts"]] == ["Main findings (CPU time, % of the sampled CPUs)"]
    assert [ln["name"] for ln in payload["charts"][0]["lines"]] == ["r7", "r6", "r5", "r4", "r3", "r2"]
    assert [r["name"] for r in payload["runs"]] == ["n2", "n1", "n0"]


def test_html_is_self_contained_escaped_and_deterministic(tmp_path):
    base = tmp_path / "runs"
    evil = "</script><script>alert(1)</script>std::map<int,&x>"
    _run(base, "20240101", 1, findings=[("spin", "warning", 0.1)], stacks={evil: 10, "ok": 90}, ipc=1.2)
    _run(base, "20240102", 2, findings=[("spin", "critical", 0.4)], stacks={evil: 60, "ok": 40}, ipc=0.9)
    out = base / "index.html"
    html, payload = render_index(base, out)
    flags = payload["regressions"]
    assert html == render_index(base, out)[0]
    assert "<script>alert(1)" not in html and "&lt;/script&gt;&lt;script&gt;alert(1)" in html
    assert "http://" not in html and "https://" not in html and "src=" not in html
    assert 'href="./20240102/report.html"' in html
    assert "<polyline" in html and "IPC (instructions per cycle)" in html
    assert {f["kind"] for f in flags} >= {"finding", "new-critical", "ipc"}
    assert html.count('class="flagged"') == 1
    assert {f["run"] for f in latest_flags(payload)} == {"20240102"}


def test_empty_directory_renders(tmp_path):
    html, payload = render_index(tmp_path, tmp_path / "index.html")
    assert "0 runs" in html and payload["regressions"] == [] and latest_flags(payload) == []


def test_cli_writes_index_and_fails_on_a_regression_of_the_newest_run(tmp_path):
    from pmuprof.cli.main import main

    base = tmp_path / "runs"
    _run(base, "20240101", 1, findings=[("spin", "warning", 0.1)])
    _run(base, "20240102", 2, findings=[("spin", "warning", 0.1)])
    assert main(["history", str(base), "--fail-on-regression"]) == 0
    assert (base / "index.html").read_text().count("<tr") == 3  # header + 2 runs
    _run(base, "20240103", 3, findings=[("spin", "critical", 0.5)])
    assert main(["history", str(base), "-o", str(tmp_path / "i.html"), "--fail-on-regression"]) == 10
    assert 'href="./runs/20240103/report.html"' in (tmp_path / "i.html").read_text()


PURGE = Path(__file__).parent / "data" / "purge-threads"  # real MariaDB 10.2.11 captures (README.md there)


def test_real_fix_is_an_improvement_not_a_regression(tmp_path):
    from pmuprof.cli.main import main

    for name in ("0-purge4", "3-purge1"):
        shutil.copytree(PURGE / name, tmp_path / name)
    runs = scan(tmp_path)
    before, after = runs
    log_share = [next(f.share for f in r.findings if f.rule == "log-sys-mutex") for r in runs]
    assert log_share[1] - log_share[0] > 0.05  # the share grew by 5.7 points: what the share-based check flagged
    assert main(["history", str(tmp_path), "--fail-on-regression"]) == 0
    payload = render_index(tmp_path, tmp_path / "index.html")[1]
    assert payload["regressions"] == []
    better = {(j["kind"], j["name"]) for j in payload["improvements"]}
    assert better == {("finding", "innodb-spin-wait"), ("finding", "srv-sys-mutex"), ("function", "ut_delay")}
    ut = next(j for j in payload["improvements"] if j["name"] == "ut_delay")
    assert (round(100 * ut["baseline"], 1), round(100 * ut["now"], 1)) == (18.1, 6.8)  # % of the 2 CPUs' time
    assert "Improvements (3)" in (tmp_path / "index.html").read_text()


def test_real_revert_is_a_regression():
    runs = {r.name: r for r in scan(PURGE)}
    flags = regressions([runs["2-purge1"], runs["0-purge4"]])  # innodb_purge_threads 1 -> back to 4
    assert {("function", "ut_delay"), ("finding", "srv-sys-mutex"), ("new-critical", "srv-sys-mutex")} <= {
        (f["kind"], f["name"]) for f in flags
    }
    assert all(f["basis"] == "cpu" for f in flags)

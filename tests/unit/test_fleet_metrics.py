"""Prometheus textfile metrics (escaping, one series per label set), the one-line verdict, the notify command."""

from __future__ import annotations

import re
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest

from pmuprof.errors import UsageError
from pmuprof.findings.diagnosis import Diagnosis
from pmuprof.findings.hostload import BASIS as HOST_BASIS
from pmuprof.findings.model import Confidence, Finding
from pmuprof.model.counters import Counters, CounterValue
from pmuprof.model.profile import Profile
from pmuprof.model.run import Run, Target
from pmuprof.model.server import ServerFacts
from pmuprof.report.metrics import (
    HELP,
    SHARE_METRICS,
    TOP_FUNCTIONS,
    RunMetrics,
    escape_label,
    last_success,
    render_metrics,
)
from pmuprof.report.summary import verdict_line
from pmuprof.workflows.fleet import Notify, Outcome, Publish, facts_missing, publish, run_notify, write_textfile

NASTY = 'std::map<K, "V">::operator[]\\x\nnext'
SERIES = re.compile(r'^([a-z_]+)\{((?:[a-z_]+="(?:[^"\\\n]|\\[\\"n])*",?)*)\} (\S+)$')


def _profile() -> Profile:
    stacks = {
        ("mariadbd", "start_thread", "fil_space_get", "ut_delay"): 60,
        ("mariadbd", "start_thread", NASTY): 30,
        ("mariadbd", "start_thread", "row_search_mvcc"): 10,
    }
    stacks.update({("mariadbd", "start_thread", f"f{i}"): 1 for i in range(20)})
    counters = Counters(
        events=(CounterValue(event="cycles", value=1000.0), CounterValue(event="instructions", value=500.0))
    )
    return Profile(stacks, counters=counters)


def _findings() -> tuple[Finding, ...]:
    return (
        Finding("innodb-spin-wait", "critical", "spin", 0.5, process="mariadbd"),
        Finding("row-scan", "info", "scan", 0.08, process="mariadbd"),
        Finding("innodb-spin-wait", "critical", "spin again", 0.4, process="mariadbd"),
    )


def _parse(text: str) -> list[tuple[str, dict[str, str], str]]:
    out = []
    for line in text.splitlines():
        if line.startswith("#"):
            assert re.match(r"^# (HELP|TYPE) [a-z_]+ ", line), line
            continue
        match = SERIES.match(line)
        assert match, line
        labels = dict(re.findall(r'([a-z_]+)="((?:[^"\\]|\\.)*)"', match.group(2)))
        out.append((match.group(1), labels, match.group(3)))
    return out


def test_metrics_text_is_valid_escaped_and_has_one_series_per_label_set():
    text = render_metrics(RunMetrics("db1", "pmuprof", 1700000000.5, 20, _profile(), Diagnosis.of(_findings())))
    series = _parse(text)
    keys = [(name, tuple(sorted(labels.items()))) for name, labels, _ in series]
    assert len(keys) == len(set(keys)), "node_exporter rejects a file with a duplicate series"
    assert all(labels["host"] == "db1" and labels["source"] == "pmuprof" for _, labels, _ in series)
    values = {
        (n, labels.get("rule") or labels.get("function") or labels.get("rank") or labels.get("severity") or ""): v
        for n, labels, v in series
    }
    assert values[("pmuprof_finding_share_ratio", "innodb-spin-wait")] == "0.5"  # the larger of the two kept
    assert values[("pmuprof_last_run_exit_code", "")] == "20"
    assert values[("pmuprof_last_run_timestamp_seconds", "")] == "1700000000.5"
    assert values[("pmuprof_findings", "critical")] == "2" and values[("pmuprof_findings", "warning")] == "0"
    assert values[("pmuprof_ipc_ratio", "")] == "0.5"
    assert float(values[("pmuprof_top_function_self_share_ratio", "1")]) == pytest.approx(60 / 120)
    assert values[("pmuprof_top_function_info", "ut_delay")] == "1"  # rank 1's name, in the info metric only
    assert sum(1 for n, _, _ in series if n == "pmuprof_top_function_self_share_ratio") == TOP_FUNCTIONS
    nasty = [
        labels["function"]
        for n, labels, _ in series
        if n == "pmuprof_top_function_info" and "map" in labels["function"]
    ]
    assert nasty == [escape_label(NASTY)] and "\n" not in nasty[0]
    assert text.count("# TYPE pmuprof_finding_share_ratio gauge") == 1
    assert values[("pmuprof_last_run_failed", "")] == "0"
    assert values[("pmuprof_last_success_timestamp_seconds", "")] == "1700000000.5"
    for name, labels, value in series:  # Prometheus' conventions: 0-1 values say _ratio, no `instance` label
        assert "instance" not in labels
        if name.endswith(("share", "_ratio")) and name != "pmuprof_ipc_ratio":
            assert name.endswith("_ratio") and 0 <= float(value) <= 1, name


def test_a_failed_run_still_reports_its_exit_code():
    series = _parse(render_metrics(RunMetrics("db1", "nightly", 5.0, 5, succeeded=False)))
    names = {n for n, _, _ in series}
    assert {"pmuprof_last_run_exit_code", "pmuprof_last_run_timestamp_seconds", "pmuprof_last_run_failed"} <= names
    assert not names & {"pmuprof_samples", "pmuprof_findings", "pmuprof_last_success_timestamp_seconds"}
    assert ("pmuprof_last_run_failed", {"host": "db1", "source": "nightly"}, "1") in series


def test_a_failed_run_with_findings_exports_no_findings_and_keeps_the_last_success():
    failed = RunMetrics(
        "db1", "nightly", 9.0, 6, _profile(), Diagnosis.of(_findings()), succeeded=False, last_success=4.5
    )
    series = _parse(render_metrics(failed))
    names = {n for n, _, _ in series}
    assert not names & {"pmuprof_findings", "pmuprof_finding_share_ratio"}  # not "0 findings": unknown
    assert ("pmuprof_last_success_timestamp_seconds", {"host": "db1", "source": "nightly"}, "4.5") in series
    assert last_success(render_metrics(failed), "nightly") == 4.5 and last_success(render_metrics(failed), "x") is None


def test_publish_carries_the_last_success_over_a_failed_run(tmp_path):
    prom, logs = tmp_path / "nightly.prom", []
    publish(Publish(prom), Outcome(0, profile=_profile(), ended=100.0), logs.append)
    publish(Publish(prom), Outcome(5, error="perf failed", ended=200.0), logs.append)
    series = _parse(prom.read_text())
    stamp = {n: v for n, _, v in series}
    assert stamp["pmuprof_last_success_timestamp_seconds"] == "100" and stamp["pmuprof_last_run_failed"] == "1"
    assert stamp["pmuprof_last_run_timestamp_seconds"] == "200"
    publish(Publish(prom), Outcome(10, profile=_profile(), ended=300.0), logs.append)  # 10: findings, a success
    assert {n: v for n, _, v in _parse(prom.read_text())}["pmuprof_last_success_timestamp_seconds"] == "300"


def test_escape_label():
    assert escape_label('a\\b"c\nd') == 'a\\\\b\\"c\\nd'


def test_verdict_line():
    assert verdict_line(Diagnosis(), 0).startswith("NO SAMPLES")
    assert verdict_line(Diagnosis(), 10, "db1") == "OK on db1: no rule fired (10 samples)"
    line = verdict_line(Diagnosis.of(list(_findings()) + [Finding("x", "warning", "w" * 500, 0.2)]), 100, "db1")
    assert line.startswith("CRITICAL on db1: spin (50 % of samples, mariadbd); 3 more: 1 critical, 1 warning, 1 info")
    assert "\n" not in verdict_line(Diagnosis.of([Finding("x", "warning", "a\nb" * 200, 0.2)]), 5) and len(line) <= 300


def test_textfile_is_replaced_atomically(tmp_path):
    path = tmp_path / "pmuprof.prom"
    path.write_text("old\n")
    write_textfile(path, "new\n")
    assert path.read_text() == "new\n" and stat.S_IMODE(path.stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pmuprof.prom"]  # no temp file left behind


def test_publish_checks_the_textfile_before_any_capture(tmp_path):
    with pytest.raises(UsageError, match="only \\*.prom"):
        Publish(tmp_path / "metrics.txt").check()
    with pytest.raises(UsageError, match="not a writable directory"):
        Publish(tmp_path / "absent" / "m.prom").check()
    Publish(tmp_path / "m.prom").check()


def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "notify.sh"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def test_notify_gets_verdict_and_report_as_arguments_and_environment(tmp_path):
    script = _script(tmp_path, 'printf "%s|" "$@"; echo "$PMUPROF_EXIT_CODE $PMUPROF_RUN_DIR"\n')
    notify = Notify.parse(f"{script} --team 'db ops'")
    assert notify.argv == (str(script), "--team", "db ops")
    code, out = run_notify(notify, "CRITICAL: x", "/r/report.html", Outcome(20, Path("/r")))
    assert code == 0 and out == "--team|db ops|CRITICAL: x|/r/report.html|20 /r\n"


def test_notify_is_killed_at_its_timeout_with_its_children(tmp_path):
    script = _script(tmp_path, "echo started; sleep 60 & sleep 60\n")
    began = time.monotonic()
    code, out = run_notify(Notify((str(script),), timeout_s=1.0), "v", "", Outcome(0))
    assert code is None and out.startswith("started") and time.monotonic() - began < 45  # its children sleep 60


def test_notify_rejects_what_it_cannot_run():
    with pytest.raises(UsageError):
        Notify.parse("")
    with pytest.raises(UsageError, match="not an executable"):
        Notify.parse("/nonexistent/page-dba now")
    with pytest.raises(UsageError):
        Notify.parse("'unbalanced")


def test_publish_writes_metrics_and_notifies_and_never_raises(tmp_path):
    script = _script(tmp_path, 'echo "$1" > "$(dirname "$0")/verdict.txt"; exit 3\n')
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "report.html").write_text("<html>")
    logs: list[str] = []
    target = Publish(tmp_path / "m.prom", Notify((str(script),)))
    publish(target, Outcome(20, run_dir, _profile(), Diagnosis.of(_findings()), ended=10.0), logs.append)
    assert (tmp_path / "verdict.txt").read_text().startswith("CRITICAL on ")
    assert "pmuprof_last_run_exit_code" in (tmp_path / "m.prom").read_text()
    assert any("exit 3" in line for line in logs)
    gone = tmp_path / "gone"
    gone.mkdir()
    checked = Publish(gone / "m.prom")
    checked.check()
    gone.rmdir()  # the directory vanished between the check and the end of the run: logged, not raised
    publish(checked, Outcome(0, ended=1.0), logs.append)
    assert "warning: metrics not written" in logs[-1]


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed (Debian: prometheus package)")
def test_promtool_lints_the_metrics_clean():
    """Prometheus' own linter: names, HELP/TYPE, suffixes; a success, a failed run, and a hostile name."""
    texts = [
        render_metrics(RunMetrics("db1", "pmuprof", 1700000000.5, 20, _profile(), Diagnosis.of(_findings()))),
        render_metrics(RunMetrics("db1", "nightly", 5.0, 5, succeeded=False, last_success=4.0)),
    ]
    for text in texts:
        lint = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
        assert lint.returncode == 0 and not (lint.stdout + lint.stderr).strip(), lint.stdout + lint.stderr
    bad = subprocess.run(
        ["promtool", "check", "metrics"],
        input="# TYPE pmuprof_x_total gauge\npmuprof_x_total 1\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode != 0  # the control: promtool does complain about a misnamed gauge


def _build(unnamed: str) -> Profile:
    """The same server, another build: its unnamed InnoDB function sits at another address."""
    stacks = {
        ("mariadbd", "start_thread", "fil_space_get", unnamed): 60,
        ("mariadbd", "start_thread", "row_search_mvcc"): 40,
    }
    return Profile(stacks)


STABLE_LABELS = {"host", "source", "server", "rule", "severity", "rank", "version", "event"}


def test_series_are_keyed_by_stable_labels_and_names_live_in_info_metrics():
    """Two builds of one server: every series but the *_info ones keeps its labels, so none churns."""
    keys = []
    for unnamed in ("[mariadbd+0xd93de0]", "[mariadbd+0xd94a10]"):
        spin = Finding(
            "innodb-spin-wait", "critical", "spin", 0.6, process="mariadbd", chain=(unnamed, "fil_space_get")
        )
        text = render_metrics(RunMetrics("db1", "nightly", 1.0, 20, _build(unnamed), Diagnosis.of((spin,))))
        series = _parse(text)
        assert ("pmuprof_finding_frame_info", unnamed) in {(n, labels.get("frame")) for n, labels, _ in series}
        assert ("pmuprof_top_function_info", unnamed) in {(n, labels.get("function")) for n, labels, _ in series}
        keys.append({(n, tuple(sorted(labels.items()))) for n, labels, _ in series if not n.endswith("_info")})
        assert all(set(labels) <= STABLE_LABELS for n, labels, _ in series if not n.endswith("_info"))
    assert keys[0] == keys[1]


def _graded_on(basis: str) -> Confidence:
    return Confidence(None, None, None, None, (), (), "high", basis=basis)


def test_one_denominator_per_metric_name():
    """A share of samples, of off-CPU time and of the host's CPU time are three metrics, never one."""
    findings = (
        Finding("innodb-spin-wait", "critical", "spin", 0.5, process="mariadbd"),
        Finding(
            "offcpu-row-lock-wait", "warning", "locks", 0.7, process="mariadbd", confidence=_graded_on("off-CPU time")
        ),
        Finding("host-saturated", "warning", "host", 0.9, process="mariadbd", confidence=_graded_on(HOST_BASIS)),
    )
    series = _parse(render_metrics(RunMetrics("db1", "nightly", 1.0, 10, _profile(), Diagnosis.of(findings))))
    rules = {n: {labels["rule"] for m, labels, _ in series if m == n} for n in SHARE_METRICS.values()}
    assert rules == {
        "pmuprof_finding_share_ratio": {"innodb-spin-wait"},
        "pmuprof_finding_offcpu_share_ratio": {"offcpu-row-lock-wait"},
        "pmuprof_finding_host_share_ratio": {"host-saturated"},
    }
    assert len({HELP[name] for name in SHARE_METRICS.values()}) == 3


def _mysqld_profile(server: ServerFacts | None) -> Profile:
    return Profile(
        {("mariadbd", "f"): 1},
        run=Run(targets=(Target(pid=1, label="mariadbd", comm="mariadbd", is_mysqld=True),)),
        server=server,
    )


@pytest.mark.parametrize(
    "server, asked, degraded",
    [
        (ServerFacts(reachable=False, error="(1045, \"Access denied for user 'prof'\")"), True, True),
        (None, True, True),
        (ServerFacts(reachable=True), True, False),
        (ServerFacts(reachable=False, error="refused"), False, False),  # --no-mysql: nothing was asked
    ],
)
def test_a_run_without_the_facts_it_asked_for_is_degraded(tmp_path, server, asked, degraded):
    """Exit 11 and `pmuprof_last_run_failed 1`, the last success kept, no findings gauges (not a clean run)."""
    profile = _mysqld_profile(server)
    problem = facts_missing(profile, asked, "r/report.html")
    assert (problem is not None) is degraded
    prom = tmp_path / "nightly.prom"
    publish(Publish(prom), Outcome(0, profile=profile, ended=100.0), [].append)
    code = problem.exit_code if problem else 0
    publish(Publish(prom), Outcome(code, profile=profile, error=str(problem or ""), ended=200.0), [].append)
    values = {n: v for n, _, v in _parse(prom.read_text())}
    assert values["pmuprof_last_run_failed"] == ("1" if degraded else "0")
    assert values["pmuprof_last_success_timestamp_seconds"] == ("100" if degraded else "200")
    assert ("pmuprof_findings" in values) is not degraded
    if degraded:
        assert code == 11 and ("Access denied" if server else "no mysql.json") in str(problem)


def test_a_target_that_is_no_server_asks_for_no_facts():
    profile = Profile({("python3", "f"): 1}, run=Run(targets=(Target(pid=1, label="python3", comm="python3"),)))
    assert facts_missing(profile, True, "r/report.html") is None

"""Off-CPU evidence in rules: the ``offcpu`` matcher's schema, its values, and the engine around it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from pmuprof.errors import RuleError
from pmuprof.findings.engine import evaluate
from pmuprof.findings.loader import load_rule
from pmuprof.model.offcpu import OffCpuProfile

from .conftest import FIXTURES, load_fixture

RULE = """\
id: my-wait
title: A wait
severity: critical
evidence:
  wait:
    offcpu:
      inclusive: ["MDL_context::acquire_lock*"]
      states: [S]
thresholds: {metric: wait, info: 0.05, warning: 0.3, critical: 1.0}
message: "{chain}: {wait.seconds} s, {wait.avg_threads:.2f} threads, {wait.threads} seen"
doc: {symptom: s, why: w, fix: f, caveats: c}
"""
MDL = FIXTURES / "offcpu-mdl-wait" / "fire-alter-behind-transaction.folded"
ROW = FIXTURES / "offcpu-row-lock-wait" / "fire-mariadb102-named.folded"


def _rule(tmp_path: Path, text: str = RULE):
    path = tmp_path / "my-wait.yaml"
    path.write_text(text, encoding="utf-8")
    return load_rule(path)


@pytest.mark.parametrize(
    "old, new, words",
    [
        ("states: [S]", "states: [Z]", "offcpu.states are of"),
        ('      inclusive: ["MDL_context::acquire_lock*"]\n', "", "exactly one of 'self', 'inclusive' or 'latches'"),
        (
            'inclusive: ["MDL_context::acquire_lock*"]\n      states: [S]',
            "latches: [no_such_latch]",
            "unknown latch id",
        ),
        ("states: [S]", "states: [S]\n      latches: [buf_pool_mutex]", "unknown key 'inclusive' in latch matcher"),
    ],
)
def test_bad_offcpu_matchers_name_the_line(tmp_path, old, new, words):
    with pytest.raises(RuleError) as err:
        _rule(tmp_path, RULE.replace(old, new))
    assert "my-wait.yaml:" in err.value.message and words in err.value.message


def test_values_are_time_threads_and_share_of_offcpu_time(tmp_path):
    """The real MDL capture: 20.4 s of MDL waits in 6.06 s of tracing, 4 waiters in the end snapshot."""
    profile, _ = load_fixture(MDL)
    (found,) = evaluate(profile, [_rule(tmp_path)])
    ev = found.evidence["wait"]
    assert ev.us == 20_415_623 and ev.seconds == pytest.approx(20.416)
    assert ev.avg_threads == pytest.approx(20_415_623 / (profile.run.offcpu.duration_s * 1e6), rel=1e-3)
    assert ev.share == pytest.approx(20_415_623 / profile.offcpu.total_us, rel=1e-6)
    assert ev.threads == 4 and found.severity == "critical"
    assert found.share == pytest.approx(ev.share, rel=1e-6)  # headline: the share of the off-CPU time


def test_a_server_with_no_samples_is_still_diagnosed(tmp_path):
    """The MDL capture has no on-CPU sample at all (everything waits): the off-CPU rule still fires, and the
    on-CPU min_samples cap (200 samples) does not hold it at info."""
    profile, _ = load_fixture(MDL)
    assert profile.total == 0
    assert [f.rule for f in evaluate(profile, [_rule(tmp_path)])] == ["my-wait"]


def test_without_offcpu_data_the_rule_is_silent_and_says_why(tmp_path):
    profile, _ = load_fixture(ROW)
    assert evaluate(replace(profile, offcpu=None), [_rule(tmp_path)]) == []
    rule = _rule(
        tmp_path,
        RULE.replace(
            "thresholds: {metric: wait, info: 0.05, warning: 0.3, critical: 1.0}",
            "fire: {any: [{evidence: wait, present: false}]}",
        ),
    )
    (found,) = evaluate(replace(profile, offcpu=None), [rule])
    assert any("--off-cpu" in m for m in found.missing), found.missing


def test_states_filter_the_time(tmp_path):
    """Only R (preempted) time under acquire_lock: far less than the S time, and below the info bound."""
    profile, _ = load_fixture(MDL)
    assert evaluate(profile, [_rule(tmp_path, RULE.replace("states: [S]", "states: [R]"))]) == []


def test_offcpu_stacks_of_another_process_do_not_count(tmp_path):
    profile, _ = load_fixture(MDL)
    other = OffCpuProfile({tuple(["otherd", *s[1:]]): n for s, n in profile.offcpu.stacks.items()})
    found = evaluate(replace(profile, offcpu=other), [_rule(tmp_path)])
    assert [f.process for f in found] == ["otherd"]


def test_a_process_seen_only_off_the_cpu_gets_no_on_cpu_findings(tmp_path):
    """Beside a profiled process, one that only blocked: on-CPU rules have no samples of it to judge, so only
    rules on off-CPU time may fire for it (whole-profile facts such as PAUSE latency must not stand in)."""
    import shutil

    from pmuprof.findings.engine import is_offcpu_metric
    from pmuprof.findings.loader import load_rules
    from pmuprof.model.rundir import load_run_dir

    run = tmp_path / "run"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "demo-output" / "spike", run)
    (run / "offcpu.folded").write_text("# unit: us\nother;main;poll_wait;off-cpu:S 9000000\n")
    profile = load_run_dir(run)
    rules = {r.id: r for r in load_rules()}
    other = [f for f in evaluate(profile, rules.values()) if f.process == "other"]
    reads_offcpu = {i for i, r in rules.items() if any(is_offcpu_metric(r, m.name) for m in r.evidence)}
    assert {f.rule for f in other} <= reads_offcpu, [f.rule for f in other]

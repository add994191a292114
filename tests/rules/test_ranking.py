"""The verdict is the cause: how the findings stage grades mixed on/off-CPU metrics and ranks findings."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from pmuprof.errors import RuleError
from pmuprof.findings.diagnosis import Diagnosis
from pmuprof.findings.engine import evaluate
from pmuprof.findings.grade import grade
from pmuprof.findings.loader import load_rule
from pmuprof.findings.model import Finding, ordered

from .conftest import FIXTURES, load_fixture

MIXED = """\
id: mixed
title: Mixed
severity: critical
evidence:
  oncpu:
    stack: {inclusive: ["buf_read_page*"]}
  offcpu:
    offcpu: {inclusive: ["buf_read_page*"], states: [S, D]}
thresholds:
  metric: [oncpu, offcpu]
  info: 0.02
  warning: 0.05
  critical: 0.15
  offcpu: {info: 0.05, warning: 0.3, critical: 1.0}
message: "m"
doc: {symptom: s, why: w, fix: f, caveats: c}
"""


@pytest.fixture
def mixed(tmp_path: Path):
    path = tmp_path / "mixed.yaml"
    path.write_text(MIXED)
    return load_rule(path)


@pytest.mark.parametrize(
    "oncpu, offcpu, level, metric",
    [
        (0.03, 0.1, 0, "offcpu"),  # info on both: the one further past its bound (0.1/0.05 = 2 > 0.03/0.02)
        (0.03, 0.5, 1, "offcpu"),  # 0.5 threads blocked is a warning though 3 % of the CPU is info
        (0.20, 0.5, 2, "oncpu"),  # 20 % of the CPU is critical
        (0.01, 2.0, 2, "offcpu"),  # two threads blocked on average: critical, whatever the CPU share
        (0.01, 0.01, None, None),  # under every bound: no finding
    ],
)
def test_each_metric_is_held_to_its_own_levels(mixed, oncpu, offcpu, level, metric) -> None:
    g = grade(mixed, {"oncpu": oncpu, "offcpu": offcpu})
    if level is None:
        assert g is None
    else:
        assert (g.level, g.metric) == (level, metric)


def test_offcpu_levels_must_be_numbers(tmp_path: Path) -> None:
    path = tmp_path / "mixed.yaml"
    path.write_text(MIXED.replace("critical: 1.0}", "critical: lots}"))
    with pytest.raises(RuleError, match="thresholds.offcpu.critical must be a number"):
        load_rule(path)


def _f(rule: str, severity: str, share: float, threads: float | None = None, **kw) -> Finding:
    return Finding(rule=rule, severity=severity, title=rule, share=share, threads=threads, **kw)


def test_a_symptom_whose_cause_fired_ranks_after_the_cause() -> None:
    spin = _f("innodb-spin-wait", "critical", 0.40, 0.8, symptom_of=("buffer-pool-too-small",))
    pool = _f("buffer-pool-too-small", "warning", 0.06, 0.1)
    assert [f.rule for f in ordered([spin, pool])] == ["buffer-pool-too-small", "innodb-spin-wait"]
    assert Diagnosis.of([spin, pool]).top.rule == "buffer-pool-too-small"
    alone = _f("innodb-spin-wait", "critical", 0.40, 0.8)  # no cause fired: the spin is the verdict
    assert Diagnosis.of([alone, pool]).top.rule == "innodb-spin-wait"


def test_a_stall_of_many_threads_ranks_above_an_oncpu_finding_of_fewer() -> None:
    stall = _f("offcpu-row-lock-wait", "critical", 0.10, 7.5)  # 10 % of the off-CPU time, 7.5 threads
    burn = _f("index-dive-cost", "critical", 0.60, 0.4)  # 60 % of the samples = 0.4 CPUs
    assert [f.rule for f in ordered([burn, stall])] == ["offcpu-row-lock-wait", "index-dive-cost"]
    assert [f.rule for f in ordered([_f("a", "warning", 0.9, 9.0), burn])] == ["index-dive-cost", "a"]  # level first


def test_findings_without_a_thread_count_rank_after_counted_ones_then_by_share() -> None:
    fact = _f("numa-placement", "critical", 0.9)
    counted = _f("index-dive-cost", "critical", 0.2, 0.1)
    assert [f.rule for f in ordered([fact, counted])] == ["index-dive-cost", "numa-placement"]
    assert [f.rule for f in ordered([_f("b", "critical", 0.2), _f("a", "critical", 0.5)])] == ["a", "b"]


def test_the_pool_is_the_verdict_of_a_live_tiny_pool_capture() -> None:
    """Live 11.4.5 capture (8 MB pool, 16 writers): the pool leads, ahead of the redo-flush wait that was the
    verdict before, and of the spin (grouped under the page latches it waits for)."""
    profile, _ = load_fixture(FIXTURES / "buffer-pool-too-small" / "fire-writes-8m.folded")
    diagnosis = Diagnosis.of(evaluate(profile))
    found = [(f.rule, f.severity, f.threads) for f in diagnosis.findings]
    assert diagnosis.top is not None and diagnosis.top.rule == "buffer-pool-too-small", found
    rank = [f.rule for f in diagnosis.findings]
    assert rank.index("buffer-pool-too-small") < rank.index("offcpu-redo-flush-wait"), found
    assert diagnosis.top.threads is not None and diagnosis.top.threads > 1.0, found  # threads held up off the CPU


def test_group_names_the_fired_cause_a_spin_was_not_grouped_under(rules) -> None:
    """The spin's samples are elsewhere than the pool's (no overlap): not grouped under it, yet its symptom."""
    import numpy as np

    from pmuprof.findings.engine import group

    by_id = {r.id: r for r in rules}
    pool = _f("buffer-pool-too-small", "warning", 0.08, 0.2, stacks=np.array([0, 1]))
    spin = _f("innodb-spin-wait", "critical", 0.30, 0.6, stacks=np.array([5, 6, 7]))
    info_cause = _f("lock-sys-mutex", "info", 0.01, 0.01, stacks=np.array([8]))
    out = {f.rule: f for f in group([pool, spin, info_cause], by_id, np.ones(10))}
    assert out["innodb-spin-wait"].explained_by == ""
    assert out["innodb-spin-wait"].symptom_of == ("buffer-pool-too-small",)  # an info cause does not count
    assert [f.rule for f in ordered(list(out.values()))][0] == "buffer-pool-too-small"
    grouped = {f.rule: f for f in group([pool, replace(spin, stacks=np.array([0, 1, 5]))], by_id, np.ones(10))}
    assert grouped["innodb-spin-wait"].explained_by == "buffer-pool-too-small"
    assert grouped["innodb-spin-wait"].symptom_of == ()


@pytest.mark.parametrize(
    "process_cores,recorded_cores,level",
    [
        (0.19, None, "info"),  # one process: the nearly idle 10.2.11 (0.22 x 0.19 = 0.04 threads)
        (0.19, 2.0, "critical"),  # the share is of a recording two busy CPUs' worth: 0.44 threads
        (2.0, 0.19, "info"),  # the process's own CPU does not lift a share of a small recording
    ],
)
def test_an_analysis_share_is_held_to_the_threads_of_the_samples_it_is_a_share_of(
    rules, process_cores, recorded_cores, level
) -> None:
    """skid.pause_share is a fraction of all the recording's samples: held to MIN_THREADS on their threads."""
    from pmuprof.findings.schema import SEVERITIES

    spin = next(r for r in rules if r.id == "innodb-spin-wait")
    g = grade(spin, {"pause_share": 0.22}, process_cores, 1000, recorded_cores)
    assert g is not None and g.metric == "pause_share"
    assert SEVERITIES[min(g.level, g.limit)] == level, g

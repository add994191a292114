"""The demo's 'blocking' scenario recorded with --off-cpu: each thread's wall-clock time is charged to
its own stack, in the state its design gives (BPF and perf; root only).

Seven threads: one transaction holding a row lock through 200 ms think times (asleep: other), two
sessions waiting for it in lock_wait_suspend_thread (futex), two committers taking turns under the log
mutex, one scanner on the CPU (running, or runnable on a busy host) and the main thread (nanosleep:
other). How the committers split their time between the CPU, fdatasync (I/O) and the log mutex (futex)
depends on how fast the disk syncs and how busy the host is (CI's disk syncs fast: they were on a CPU or
waiting for one 60 % of the time), so the tests hold each role to its thread count and its own states,
and the redo rule to the committers' measured waits, not to a fixed split.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from helpers import assert_host_load_and_thread_table

from pmuprof.capture.offcpu import tracer
from pmuprof.workflows.demo import DemoOptions, build_demo, run_demo

THREADS = 7
ROLES = {"lock_wait_suspend_thread": 2, "trx_hold_row_lock": 1, "ha_commit_trans": 2, "handle_connection": 1}
MAIN = "main"  # the main thread: every stack no role's frame names
SLACK = 0.3  # threads' worth: sampling noise on the roles that run, scheduling around the capture's edges


@pytest.fixture(scope="module")
def blocking_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, dict]:
    if not (shutil.which("gcc") or shutil.which("cc")) or not shutil.which("perf"):
        pytest.skip("gcc and perf are needed for the demo workload")
    why, _ = tracer.unavailable([os.getpid()])
    if why:
        pytest.skip(why)
    binary = build_demo(tmp_path_factory.mktemp("demo-cache"))  # a private cache: never another checkout's build
    run = tmp_path_factory.mktemp("demo-blocking") / "run"
    result = run_demo(DemoOptions(scenario="blocking", duration=4, out_dir=run, cache_dir=binary.parent))
    assert result.workload_status == 0
    assert result.report.profile.offcpu is not None, result.report.profile.run.warnings
    return run, _roles(result), {f.rule: f for f in result.report.findings}


def _roles(result) -> dict[str, dict[str, float]]:
    """Per role (the frame naming it, or main): threads' worth of wall-clock time in each state."""
    from pmuprof.report.wallclock import wall_stacks

    stacks, why = wall_stacks(result.report.profile)
    assert stacks, why
    total = sum(stacks.values())
    out: dict[str, dict[str, float]] = {}
    for stack, us in stacks.items():
        role = next((f for f in ROLES if f in stack), MAIN)
        state = stack[1].strip("[]")
        out.setdefault(role, {})[state] = out.get(role, {}).get(state, 0.0) + us / total * THREADS
    return out


def _threads(states: dict[str, float], *which: str) -> float:
    return sum(v for k, v in states.items() if not which or k in which)


@pytest.mark.parametrize("role, count", [*ROLES.items(), (MAIN, 1)])
def test_each_thread_is_charged_its_wall_clock_time(blocking_run, role, count):
    _, roles, _ = blocking_run
    assert abs(_threads(roles.get(role, {})) - count) <= SLACK, roles


@pytest.mark.parametrize(
    "role, states, count",
    [
        ("lock_wait_suspend_thread", ("blocked: futex",), 2),  # the waiters sleep on the condition variable
        ("trx_hold_row_lock", ("blocked: other",), 1),  # think time: nanosleep
        (MAIN, ("blocked: other",), 1),
        ("handle_connection", ("running", "runnable"), 1),  # the scanner never sleeps
    ],
)
def test_each_role_waits_the_way_it_is_built_to(blocking_run, role, states, count):
    _, roles, _ = blocking_run
    assert _threads(roles.get(role, {}), *states) >= count - SLACK, roles


def test_committers_wait_for_the_disk_and_the_log_mutex(blocking_run):
    _, roles, _ = blocking_run
    commit = roles.get("ha_commit_trans", {})
    assert commit.get("blocked: I/O", 0.0) >= 0.1, roles  # fdatasync on a real file: some of it is I/O on any disk
    assert commit.get("blocked: futex", 0.0) >= 0.05, roles  # one holds the log mutex, the other sleeps on it
    assert commit.get("blocked: other", 0.0) <= 0.1, roles
    others = {role: states.get("blocked: I/O", 0.0) for role, states in roles.items() if role != "ha_commit_trans"}
    assert all(v <= 0.05 for v in others.values()), others  # only the committers do I/O


def test_rules_name_the_waits(blocking_run):
    _, roles, findings = blocking_run
    row = findings.get("offcpu-row-lock-wait")
    assert row is not None, sorted(findings)
    assert row.chain[0] == "lock_wait_suspend_thread" and "ha_innobase_update_row" in row.chain
    assert abs(row.evidence["named"].avg_threads - 2) <= SLACK, row.evidence  # two waiters, all the time
    redo = findings.get("offcpu-redo-flush-wait")
    assert redo is not None, sorted(findings)
    assert "log_write_up_to" in redo.chain, redo.chain
    commit = roles["ha_commit_trans"]
    waited = commit.get("blocked: I/O", 0.0) + commit.get("blocked: futex", 0.0)  # off-CPU, not waiting for a CPU
    assert abs(redo.evidence["named"].avg_threads - waited) <= 0.1, (redo.evidence, roles)


def test_report_shows_the_wall_clock_view(blocking_run):
    run, _, _ = blocking_run
    html = (run / "report.html").read_text(encoding="utf-8")
    assert "[blocked: futex]" in html and "lock_wait_suspend_thread" in html and 'id="offcpu-threads"' in html


def test_report_shows_the_host_load_card_and_the_thread_table(blocking_run):
    run, _, _ = blocking_run
    assert_host_load_and_thread_table(run)  # issue 23 item 4: host context and thread tables in the demos

"""The wall-clock view (on-CPU samples as time plus off-CPU time, by state) and the thread-group summary."""

from __future__ import annotations

from dataclasses import replace

import pytest
from helpers import make_profile

from pmuprof.model.offcpu import OffCpuProfile, Snapshot, ThreadGroup, Threads
from pmuprof.findings.diagnosis import Diagnosis
from pmuprof.report import build_payload, write_outputs
from pmuprof.report.markdown import render_markdown
from pmuprof.report.wallclock import FUTEX, IO, OTHER, RUNNABLE, RUNNING, blocked_state, wall_stacks

K = "entry_SYSCALL_64_after_hwframe_[k];do_syscall_64_[k]"
OFF = {
    f"mariadbd;start_thread;do_command;MDL_context::acquire_lock;__futex_abstimed_wait_common;{K};__x64_sys_futex_[k];futex_wait_[k];off-cpu:S": 3_000_000,
    f"mariadbd;start_thread;log_write_up_to;fdatasync;{K};__x64_sys_fdatasync_[k];ext4_sync_file_[k];off-cpu:D": 500_000,
    f"mariadbd;start_thread;do_command;vio_read;poll;{K};__x64_sys_poll_[k];do_sys_poll_[k];off-cpu:S": 1_000_000,
    "mariadbd;start_thread;do_command;JOIN::exec;asm_sysvec_reschedule_ipi_[k];schedule_[k];off-cpu:R": 250_000,
}
ON = {("mariadbd", "start_thread", "do_command", "JOIN::exec"): 25}  # 25 samples at 100 Hz = 0.25 s


def _profile(frequency: int | None = 100, woken: dict | None = None):
    """``woken``: more stacks, and the folded file's ``wakeups: on`` header (the tracer traced wake-ups)."""
    stacks = {tuple(k.split(";")): v for k, v in (OFF | (woken or {})).items()}
    off = OffCpuProfile(stacks, Threads((_snapshot(),)), {"wakeups": "on"} if woken is not None else {})
    return replace(make_profile(ON, {"record": {"frequency": frequency}}), offcpu=off)


def _snapshot() -> Snapshot:
    groups = (
        ThreadGroup(
            3,
            "S",
            (11, 12, 13),
            {"mariadbd": 3},
            "futex_do_wait",
            ("__x64_sys_futex", "futex_wait"),
            (
                "start_thread",
                "do_command",
                "MDL_context::acquire_lock(MDL_request*, double)",
                "__futex_abstimed_wait_common",
            ),
            "bpf",
            2500.0,
        ),
        ThreadGroup(5, "S", (1, 2, 3, 4, 5), {"mariadbd": 5}, "do_sys_poll", ("__x64_sys_poll", "do_sys_poll")),
    )
    return Snapshot("end", "2026-11-23T17:00:00Z", 10, "mariadbd", 8, {"S": 8}, groups)


@pytest.mark.parametrize("stack, state", [(k, s) for k, s in zip(OFF, (FUTEX, IO, OTHER, RUNNABLE))])
def test_each_offcpu_stack_gets_its_state_group(stack, state):
    assert blocked_state(tuple(stack.split(";"))) == state


def test_wall_stacks_put_the_state_under_the_root_and_scale_samples_to_time():
    stacks, why = wall_stacks(_profile(woken={}))
    assert why == ""
    assert stacks[("mariadbd", f"[{RUNNING}]", "start_thread", "do_command", "JOIN::exec")] == 250_000
    by_state = {}
    for s, n in stacks.items():
        assert s[0] == "mariadbd" and s[-1].startswith("off-cpu:") is False  # the state leaf moved under the root
        by_state[s[1]] = by_state.get(s[1], 0) + n
    assert by_state == {
        f"[{RUNNING}]": 250_000,
        f"[{FUTEX}]": 3_000_000,
        f"[{IO}]": 500_000,
        f"[{OTHER}]": 1_000_000,
        f"[{RUNNABLE}]": 250_000,
    }


def test_time_waiting_for_a_cpu_after_a_wake_up_is_runnable_not_blocked():
    woken = f"mariadbd;start_thread;do_command;MDL_context::acquire_lock;__futex_abstimed_wait_common;{K};__x64_sys_futex_[k];futex_wait_[k];off-cpu:W"
    stacks, why = wall_stacks(_profile(woken={woken: 400_000}))
    assert why == ""
    runnable = {s: n for s, n in stacks.items() if s[1] == f"[{RUNNABLE}]"}
    assert runnable[("mariadbd", f"[{RUNNABLE}]", *woken.split(";")[1:-1])] == 400_000
    assert sum(n for s, n in stacks.items() if s[1] == f"[{FUTEX}]") == 3_000_000


def test_a_capture_without_wake_ups_says_runnable_is_preempted_time_only():
    _, why = wall_stacks(_profile())
    assert "wake-ups were not traced" in why


def test_without_a_frequency_on_cpu_time_is_left_out_and_said():
    stacks, why = wall_stacks(_profile(frequency=None))
    assert "frequency is unknown" in why and sum(stacks.values()) == 4_750_000


def test_payload_states_shares_and_thread_groups():
    p = build_payload(_profile(), Diagnosis())
    rows = {r["state"]: r for r in p.wall.states}
    assert list(rows) == [RUNNING, RUNNABLE, FUTEX, IO, OTHER]
    assert rows[FUTEX]["seconds"] == 3.0 and rows[FUTEX]["share"] == pytest.approx(3.0 / 5.0)
    (snap,) = p.offcpu_threads
    assert [g["count"] for g in snap["groups"]] == [5, 3]  # most threads first
    assert (
        snap["groups"][1]["stack"]
        == "__futex_abstimed_wait_common ← MDL_context::acquire_lock ← do_command ← start_thread"
    )


def test_report_shows_the_wall_clock_graph_and_the_threads(tmp_path):
    paths = write_outputs(_profile(), Diagnosis(), tmp_path)
    html = paths["html"].read_text()
    assert 'id="wallclock"' in html and 'id="offcpu-threads"' in html
    assert html.count("<svg") >= 1 and "[blocked: futex]" in html and "3,000,000 µs" in html
    assert "[blocked: futex]" not in html.split('id="pmuprof-data"')[1]  # the picture stays out of the JSON
    md = render_markdown(build_payload(_profile(), Diagnosis()))
    assert "### Wall clock (on-CPU and off-CPU)" in md and "| `mariadbd` | blocked: futex | 3.0 | 60.0 % |" in md


def test_no_offcpu_no_wall_clock_section(tmp_path):
    profile = make_profile(ON, {"record": {"frequency": 100}})
    p = build_payload(profile, Diagnosis())
    assert p.wall is None and p.offcpu_threads == []
    html = write_outputs(profile, Diagnosis(), tmp_path)["html"].read_text()
    assert 'id="wallclock"' not in html and "### Wall clock" not in render_markdown(p)


@pytest.mark.parametrize(
    "frame, short",
    [
        ("(anonymous namespace)::Lock_wait::wait(int)", "(anonymous namespace)::Lock_wait::wait"),
        ("f(a)::g(b)", "f(a)::g"),
        ("ns::f(int)", "ns::f"),
        ("x(y(z))", "x"),
        ("plain", "plain"),
    ],
)
def test_only_the_trailing_argument_list_is_cut(frame, short):
    from pmuprof.report.wallclock import _short

    assert _short(frame) == short

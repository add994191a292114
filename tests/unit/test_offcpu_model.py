"""A run directory's offcpu.folded and threads.json in the typed model: loaded, restricted, tolerated when damaged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pmuprof.analysis.load import load
from pmuprof.model import rundir

ON_CPU = "# unit: samples\nmariadbd;start_thread;do_command;mysql_parse 30\nother;main;spin 10\n"
OFF_CPU = (
    "# unit: us\n# duration_s: 2.0\n"
    "mariadbd;start_thread;do_command;MDL_context::acquire_lock;__futex_abstimed_wait_common;"
    "__x64_sys_futex_[k];off-cpu:S 1500000\n"
    "mariadbd;start_thread;do_command;vio_read;poll;do_sys_poll_[k];off-cpu:S 400000\n"
    "other;main;fsync;ext4_sync_file_[k];off-cpu:D 7000\n"
)
THREADS = {
    "snapshots": [
        {
            "label": "mariadbd",
            "pid": 10,
            "when": "end",
            "at": "2026-11-23T17:00:00Z",
            "threads": 3,
            "states": {"S": 3},
            "groups": [
                {
                    "count": 2,
                    "state": "S",
                    "tids": [11, 12],
                    "wchan": "futex_do_wait",
                    "kernel": ["__x64_sys_futex"],
                    "user": ["start_thread", "do_command"],
                }
            ],
        },
        {"label": "other", "pid": 20, "when": "end", "at": "2026-11-23T17:00:00Z", "threads": 1, "groups": []},
    ]
}


def _run_dir(tmp_path: Path, offcpu: str | None = OFF_CPU, threads: str | None = json.dumps(THREADS)) -> Path:
    path = tmp_path / "run"
    path.mkdir()
    (path / rundir.STACKS).write_text(ON_CPU)
    if offcpu is not None:
        (path / rundir.OFFCPU).write_text(offcpu)
    if threads is not None:
        (path / rundir.THREADS).write_text(threads)
    return path


def test_offcpu_stacks_and_threads_load_into_the_profile(tmp_path):
    profile = load(_run_dir(tmp_path))
    assert profile.total == 40  # the on-CPU samples are untouched
    off = profile.offcpu
    assert off is not None and off.total_us == 1_907_000
    assert off.headers["unit"] == "us"
    stack = (
        "mariadbd",
        "start_thread",
        "do_command",
        "MDL_context::acquire_lock",
        "__futex_abstimed_wait_common",
        "__x64_sys_futex_[k]",
        "off-cpu:S",
    )
    assert off.stacks[stack] == 1_500_000
    groups = off.threads.snapshots[0].groups
    assert groups[0].tids == (11, 12) and groups[0].user == ("start_thread", "do_command")


def test_restricting_a_profile_restricts_its_offcpu_part(tmp_path):
    profile = load(_run_dir(tmp_path)).restrict(["other"])
    assert profile.offcpu.total_us == 7000
    assert [s.label for s in profile.offcpu.threads.snapshots] == ["other"]


def test_without_offcpu_files_there_is_no_offcpu_part(tmp_path):
    profile = load(_run_dir(tmp_path, offcpu=None, threads=None))
    assert profile.offcpu is None and profile.total == 40


def test_a_damaged_threads_json_is_left_out_with_one_note(tmp_path):
    profile = load(_run_dir(tmp_path, threads="{not json"))
    assert profile.offcpu.total_us == 1_907_000 and profile.offcpu.threads.snapshots == ()
    notes = [w for w in profile.run.warnings if rundir.THREADS in w]
    assert len(notes) == 1 and "left out" in notes[0], profile.run.warnings


@pytest.mark.parametrize("text", ["mariadbd;a;b not-a-number\n", "\0\0\0binary"])
def test_a_damaged_offcpu_folded_is_left_out_with_one_note(tmp_path, text):
    profile = load(_run_dir(tmp_path, offcpu=text))
    assert profile.offcpu is None and profile.total == 40
    notes = [w for w in profile.run.warnings if rundir.OFFCPU in w]
    assert len(notes) == 1 and "off-CPU time left out" in notes[0], profile.run.warnings


def test_a_capture_blocked_all_along_still_gets_a_report(tmp_path):
    """No on-CPU sample at all (every thread waited), but off-CPU time: the report is written, not refused."""
    from pmuprof.pipeline import report_input

    path = _run_dir(tmp_path)
    (path / rundir.STACKS).write_text("# unit: samples\n")
    result = report_input(path, path)
    assert result.profile.total == 0 and result.profile.offcpu.total_us == 1_907_000
    assert 'id="wallclock"' in result.paths["html"].read_text()

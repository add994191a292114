"""perfdata_reader without perf: its command line, and how exit statuses become results or fallbacks."""

from __future__ import annotations

import json
import stat
import time
from pathlib import Path

import pytest

from pmuprof.tools.native import perfdata as perfdata_reader
from pmuprof.tools.native.fold import FoldError


def test_argv_is_the_folders_options_then_the_file():
    argv = perfdata_reader.perfdata_argv(
        Path("/b/pmuprof-perfdata"),
        Path("/d/perf.data"),
        Path("/t/m.json"),
        pids=(12, 13),
        comms=["mariadbd"],
        per_thread=True,
        names={12: "db one"},
        raw_unknown=True,
    )
    assert argv == [
        "/b/pmuprof-perfdata",
        "--meta",
        "/t/m.json",
        "--pid",
        "12",
        "--pid",
        "13",
        "--comm",
        "mariadbd",
        "--name",
        "12=db one",
        "--per-thread",
        "--raw-unknown",
        "--inline",
        "--process-names",
        "/d/perf.data",
    ]


def test_argv_without_inline_frames():
    argv = perfdata_reader.perfdata_argv(
        Path("/b/pmuprof-perfdata"), Path("/d/perf.data"), Path("/t/m.json"), timed=True, inline=False
    )
    assert argv == ["/b/pmuprof-perfdata", "--meta", "/t/m.json", "--time", "--process-names", "/d/perf.data"]


def _fake(tmp_path: Path, body: str) -> Path:
    exe = tmp_path / "fake-perfdata"
    exe.write_text("#!/bin/sh\n" + body)
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe


def test_missing_binary_asks_for_perf_script(monkeypatch, tmp_path):
    monkeypatch.setenv("PMUPROF_PERFDATA", "")
    with pytest.raises(perfdata_reader.PerfdataFallback, match="not built") as err:
        perfdata_reader.fold_perf_data_native(tmp_path / "perf.data")
    assert err.value.status == perfdata_reader.UNSUPPORTED


@pytest.mark.parametrize("status", [3, 4])
def test_statuses_3_and_4_fall_back_with_the_reason(tmp_path, status):
    exe = _fake(tmp_path, f"echo 'pmuprof-perfdata: unsupported: DWARF call graphs' >&2\nexit {status}\n")
    with pytest.raises(perfdata_reader.PerfdataFallback, match="DWARF call graphs") as err:
        perfdata_reader.fold_perf_data_native(tmp_path / "perf.data", binary=exe)
    assert err.value.status == status and "perf script" in str(err.value)


def test_other_failures_are_errors(tmp_path):
    exe = _fake(tmp_path, "echo 'pmuprof-perfdata: out of memory' >&2\nexit 1\n")
    with pytest.raises(FoldError, match="out of memory"):
        perfdata_reader.fold_perf_data_native(tmp_path / "perf.data", binary=exe)


def test_success_reads_stacks_meta_and_dsos(tmp_path):
    meta = {
        "kept": 3,
        "filtered": 0,
        "bad_lines": 0,
        "truncated": False,
        "pid_known": True,
        "names": {"7": "mariadbd"},
        "events": {},
        "leaves": [[3, "/usr/sbin/mariadbd", "ut_delay", "1c"]],
        "dsos": [
            {
                "path": "/usr/sbin/mariadbd",
                "build_id": "ab",
                "found_at": None,
                "matched": False,
                "symbols": 0,
                "tree_lookups": 0,
            }
        ],
        "perf_data": {"samples": 4, "lost": 1},
    }
    body = (
        'while [ "$1" != --meta ]; do shift; done\n'
        f"cat > \"$2\" <<'EOF'\n{json.dumps(meta)}\nEOF\n"
        "printf 'mariadbd;main;ut_delay 3\\n'\n"
    )
    got = perfdata_reader.fold_perf_data_native(tmp_path / "perf.data", binary=_fake(tmp_path, body))
    assert got.result.stacks == {("mariadbd", "main", "ut_delay"): 3}
    assert got.result.leaves == {("/usr/sbin/mariadbd", "ut_delay", 0x1C): 3}
    assert got.samples == 4 and got.lost == 1
    assert got.dsos == (perfdata_reader.DsoSymbols("/usr/sbin/mariadbd", "ab", None, False, 0, 0),)


def test_a_hung_reader_is_stopped_in_bounded_time(tmp_path, monkeypatch):
    """The reader gets the same watchdog as perf script and pmuprof-fold: no CPU for stall_s() is hung."""
    monkeypatch.setenv("PMUPROF_STALL_S", "1")
    exe = _fake(tmp_path, "exec sleep 60\n")
    t0 = time.monotonic()
    with pytest.raises(FoldError, match="used no CPU"):
        perfdata_reader.fold_perf_data_native(tmp_path / "perf.data", binary=exe)
    assert time.monotonic() - t0 < 45  # before the reader's own 60 s: a starved worker may take seconds


@pytest.mark.parametrize(("env", "inline"), [(None, True), ("0", True), ("1", False)])
def test_pmuprof_no_inline_drops_the_inline_option(tmp_path, monkeypatch, env, inline):
    from pmuprof.tools.perf import read as perfread

    meta = {
        "kept": 1,
        "filtered": 0,
        "bad_lines": 0,
        "truncated": False,
        "pid_known": True,
        "names": {},
        "events": {},
        "leaves": [],
        "dsos": [],
        "perf_data": {"samples": 1, "lost": 0},
    }
    body = (
        f'echo "$@" > {tmp_path / "argv"}\n'
        'while [ "$1" != --meta ]; do shift; done\n'
        f"cat > \"$2\" <<'EOF'\n{json.dumps(meta)}\nEOF\n"
        "printf 'mariadbd;main 1\\n'\n"
    )
    monkeypatch.setenv("PMUPROF_PERFDATA", str(_fake(tmp_path, body)))
    if env is None:
        monkeypatch.delenv("PMUPROF_NO_INLINE", raising=False)
    else:
        monkeypatch.setenv("PMUPROF_NO_INLINE", env)
    result, argv = perfread.fold_perf_data("perf", tmp_path / "perf.data")
    assert result.stacks == {("mariadbd", "main"): 1}
    assert ("--inline" in (tmp_path / "argv").read_text().split()) is inline and ("--inline" in argv) is inline

"""A run directory folded without inline frames is read again from its perf.data where pmuprof-perfdata can add
them, and a report read without them says so.

The case: a MariaDB 11.4.5 capture (DWARF) folded through perf script because pmuprof-perfdata was not found
at capture time (tests/rules/data/m114-spin200). Its stacks.folded names no inlined acquirer, so its latch
table said "page latch or index tree latch" for waits addr2line -i gives to the index latch; reported again
with the reader built, the same perf.data gives addr2line's split.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pmuprof.analysis import archive, load as loadmod
from pmuprof.analysis.inline import INLINE_FEATURE, inline_off
from pmuprof.model import rundir
from pmuprof.model.analysis import Analysis
from pmuprof.model.profile import Profile
from pmuprof.model.run import KeptBinaries, KeptBinary, Run
from pmuprof.tools.perf.read import DECLINED

PERF_SCRIPT = ("/usr/bin/perf", "script", "-i", "perf.data", "-F", "comm,pid,tid,ip,sym,symoff,dso", "--no-inline")
NATIVE = ("/opt/pmuprof-perfdata", "--meta", "meta.json", "--inline", "--process-names", "perf.data")


def _run_dir(tmp_path: Path, reader: tuple[str, ...], run: Run | None = None) -> Path:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    rundir.write_typed(run_dir / rundir.RUN_JSON, run or Run())
    rundir.write_typed(run_dir / rundir.ANALYSIS, Analysis(reader_argv=reader))
    (run_dir / rundir.STACKS).write_text("mariadbd;btr_cur_t::search_leaf;ssux_lock_impl<true>::rd_wait 3\n")
    (run_dir / rundir.PERF_DATA).write_bytes(b"PERFILE2")
    return run_dir


@pytest.fixture
def reader_built(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """pmuprof-perfdata found; reading a run directory's perf.data is recorded instead of done."""
    reads: list[Path] = []
    monkeypatch.setattr(archive, "perfdata_path", lambda: Path("/opt/pmuprof-perfdata"))
    monkeypatch.setattr(
        loadmod, "read_run_dir", lambda path, choice, symfs=None, work_dir=None: reads.append(path) or "refolded"
    )
    monkeypatch.delenv("PMUPROF_NO_INLINE", raising=False)
    return reads


def test_stacks_folded_by_perf_script_are_read_again(tmp_path: Path, reader_built: list[Path]) -> None:
    run_dir = _run_dir(tmp_path, PERF_SCRIPT)
    assert archive.folded_without_inline(run_dir)
    assert loadmod.load(run_dir) == "refolded" and reader_built == [run_dir]
    assert archive.rereads(run_dir) == run_dir  # the kept binaries' symfs follows the same decision


def test_stacks_with_inline_frames_are_kept(tmp_path: Path, reader_built: list[Path]) -> None:
    run_dir = _run_dir(tmp_path, NATIVE)
    assert isinstance(loadmod.load(run_dir), Profile) and not reader_built


@pytest.mark.parametrize("why", ["no reader", "PMUPROF_NO_INLINE", "binaries elsewhere", "no perf.data", "--symfs"])
def test_stacks_are_kept_where_reading_again_adds_nothing(
    why: str, tmp_path: Path, reader_built: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = Run()
    if why == "binaries elsewhere":  # perf script reads the kept copies, which carry no DWARF
        run = Run(kept_binaries=KeptBinaries("binaries.tar.gz", 1, (KeptBinary("/nowhere/mariadbd", "dd" * 20),)))
    run_dir = _run_dir(tmp_path, PERF_SCRIPT, run)
    if why == "no reader":
        monkeypatch.setattr(archive, "perfdata_path", lambda: None)
    elif why == "PMUPROF_NO_INLINE":
        monkeypatch.setenv("PMUPROF_NO_INLINE", "1")
    elif why == "no perf.data":
        (run_dir / rundir.PERF_DATA).unlink()
    symfs = tmp_path if why == "--symfs" else None
    assert isinstance(loadmod.load(run_dir, symfs=symfs), Profile) and not reader_built


def test_a_file_the_reader_declined_is_not_read_again(tmp_path: Path, reader_built: list[Path]) -> None:
    """pmuprof-perfdata declines DWARF call graphs, compressed files, ...: reading again would only run perf script."""
    run_dir = _run_dir(tmp_path, PERF_SCRIPT)
    note = f"{DECLINED} (DWARF call graphs); no inline frames, and no process's own executable is known"
    rundir.write_typed(
        run_dir / rundir.ANALYSIS,
        Analysis(reader_argv=PERF_SCRIPT, features_off=tuple(inline_off(PERF_SCRIPT, (note,)))),
    )
    assert not archive.folded_without_inline(run_dir)
    assert isinstance(loadmod.load(run_dir), Profile) and not reader_built


def test_a_damaged_analysis_keeps_the_stacks(tmp_path: Path, reader_built: list[Path]) -> None:
    run_dir = _run_dir(tmp_path, PERF_SCRIPT)
    (run_dir / rundir.ANALYSIS).write_text("{not json")
    assert not archive.folded_without_inline(run_dir)


def test_the_report_says_when_a_perf_data_was_read_without_inline_frames() -> None:
    assert inline_off(NATIVE) == [] and inline_off(()) == []  # folded or perf script text: nothing was read
    (off,) = inline_off(PERF_SCRIPT)
    assert off.feature == INLINE_FEATURE and "perf script" in off.why and "make -C native" in off.fix
    (off,) = inline_off(PERF_SCRIPT + ("--symfs=/tmp/kept",))
    assert "--symfs" in off.why
    (off,) = inline_off(NATIVE[:3] + NATIVE[4:])
    assert "PMUPROF_NO_INLINE" in off.why
    (off,) = inline_off(PERF_SCRIPT, (f"{DECLINED} (compressed); no inline frames",))
    assert "declined" in off.why and "make -C native" not in off.fix

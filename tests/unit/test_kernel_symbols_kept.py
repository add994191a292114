"""The recording boot's kernel symbols kept in the run directory, and used by a report on another kernel."""

from __future__ import annotations

import gzip
from pathlib import Path

from pmuprof.analysis.kernel import recorded_kallsyms
from pmuprof.capture.proc.kernel import keep_kernel_symbols, text_lines
from pmuprof.model.jsontypes import from_json, to_json
from pmuprof.model.run import KernelSymbols, Run
from pmuprof.tools.native.perfdata import perfdata_argv
from pmuprof.tools.perf.argv import script_argv

KALLSYMS = (
    b"ffffffff81000000 T _text\n"
    b"ffffffff81001000 t do_one_initcall\n"
    b"ffffffff81002000 W weak_fn\n"
    b"ffffffff82000000 D some_data\n"
    b"ffffffff83000000 b bss_thing\n"
    b"ffffffffc0001000 t ext4_writepages\t[ext4]\n"
    b"ffffffffc0002000 d ext4_data\t[ext4]\n"
)
BID = "ab" * 20


def _notes(tmp: Path, bid: str = BID) -> Path:
    desc = bytes.fromhex(bid)
    notes = tmp / "notes"
    notes.write_bytes(
        (4).to_bytes(4, "little") + len(desc).to_bytes(4, "little") + (3).to_bytes(4, "little") + b"GNU\0" + desc
    )
    return notes


def test_text_lines_keep_functions_only_and_refuse_zeroed_addresses() -> None:
    data, count = text_lines(KALLSYMS)
    assert count == 4
    assert b"some_data" not in data and b"bss_thing" not in data and b"ext4_data" not in data
    assert b"ext4_writepages\t[ext4]\n" in data and data.startswith(b"ffffffff81000000 T _text\n")
    assert text_lines(b"0000000000000000 T _text\n0000000000000000 t x\n") is None


def test_keep_writes_gzip_and_says_what_it_holds(tmp_path: Path) -> None:
    src = tmp_path / "kallsyms"
    src.write_bytes(KALLSYMS)
    kept = keep_kernel_symbols(tmp_path / "kallsyms.gz", str(src), str(_notes(tmp_path)))
    assert kept.file == "kallsyms.gz" and kept.build_id == BID and kept.symbols == 4 and not kept.why_not
    assert kept.bytes == (tmp_path / "kallsyms.gz").stat().st_size
    assert gzip.decompress((tmp_path / "kallsyms.gz").read_bytes()) == text_lines(KALLSYMS)[0]
    keep_kernel_symbols(tmp_path / "again.gz", str(src), str(_notes(tmp_path)))
    assert (tmp_path / "again.gz").read_bytes() == (tmp_path / "kallsyms.gz").read_bytes(), "no timestamp inside"


def test_not_kept_says_why(tmp_path: Path) -> None:
    src = tmp_path / "kallsyms"
    src.write_bytes(b"0000000000000000 T _text\n")
    hidden = keep_kernel_symbols(tmp_path / "k.gz", str(src), str(_notes(tmp_path)))
    assert not hidden.file and "kptr_restrict" in hidden.why_not and not (tmp_path / "k.gz").exists()
    no_notes = keep_kernel_symbols(tmp_path / "k.gz", str(src), str(tmp_path / "absent"))
    assert not no_notes.file and "no build-id" in no_notes.why_not
    no_kallsyms = keep_kernel_symbols(tmp_path / "k.gz", str(tmp_path / "absent"), str(_notes(tmp_path)))
    assert not no_kallsyms.file and no_kallsyms.why_not


def test_run_json_round_trip() -> None:
    run = Run(kernel_symbols=KernelSymbols(file="kallsyms.gz", build_id=BID, release="6.1.0", symbols=4, bytes=99))
    assert from_json(Run, to_json(run)) == run
    assert from_json(Run, {}).kernel_symbols is None, "a run directory from before is still read"


def test_used_only_on_another_kernel(tmp_path: Path) -> None:
    src = tmp_path / "kallsyms"
    src.write_bytes(KALLSYMS)
    kept = keep_kernel_symbols(tmp_path / "kallsyms.gz", str(src), str(_notes(tmp_path)))
    run = Run(kernel_symbols=kept)
    with recorded_kallsyms(tmp_path, run, running_build_id="cd" * 20) as path:
        assert path is not None and path.read_bytes() == text_lines(KALLSYMS)[0]
    assert not path.exists(), "a temporary copy"
    with recorded_kallsyms(tmp_path, run, running_build_id=BID) as same:
        assert same is None
    with recorded_kallsyms(None, run, running_build_id="cd" * 20) as bare:
        assert bare is None
    (tmp_path / "kallsyms.gz").write_bytes(b"not gzip")
    with recorded_kallsyms(tmp_path, run, running_build_id="cd" * 20) as damaged:
        assert damaged is None


def test_both_readers_get_the_file() -> None:
    argv = script_argv("perf", Path("p.data"), (7,), kallsyms=Path("/t/kallsyms"))
    assert "--kallsyms=/t/kallsyms" in argv and "--kallsyms" not in " ".join(script_argv("perf", Path("p.data")))
    native = perfdata_argv(Path("/b/pmuprof-perfdata"), Path("/d/perf.data"), Path("/t/m.json"), kallsyms=Path("/k"))
    assert native[native.index("--kallsyms") + 1] == "/k" and native[-1] == "/d/perf.data"


def test_with_symfs_perf_is_told_where_kallsyms_is(tmp_path: Path, monkeypatch) -> None:
    """perf reads kallsyms under --symfs, where there is none: this kernel's /proc/kallsyms, the run's copy, or
    perf's cached copy of another kernel's is named explicitly; never another kernel's symbols for this one."""
    with recorded_kallsyms(None, Run(), running_build_id=BID, recorded_build_id=BID, symfs=True) as here:
        assert here == Path("/proc/kallsyms")
    with recorded_kallsyms(None, Run(), running_build_id=BID, recorded_build_id=BID) as plain:
        assert plain is None, "perf finds this kernel's own"
    other = "cd" * 20
    cache = tmp_path / "cache"
    monkeypatch.setattr("pmuprof.analysis.kernel.PERF_CACHE", cache)
    with recorded_kallsyms(None, Run(), running_build_id=BID, recorded_build_id=other, symfs=True) as none:
        assert none is None
    (cache / "[kernel.kallsyms]" / other).mkdir(parents=True)
    (cache / "[kernel.kallsyms]" / other / "kallsyms").write_bytes(KALLSYMS)
    with recorded_kallsyms(None, Run(), running_build_id=BID, recorded_build_id=other, symfs=True) as cached:
        assert cached == cache / "[kernel.kallsyms]" / other / "kallsyms"
    src = tmp_path / "kallsyms"
    src.write_bytes(KALLSYMS)
    kept = keep_kernel_symbols(tmp_path / "kallsyms.gz", str(src), str(_notes(tmp_path, "ef" * 20)))
    with recorded_kallsyms(tmp_path, Run(kernel_symbols=kept), running_build_id=BID, recorded_build_id=other) as x:
        assert x is None, "the run's copy is of a third kernel: not used for this recording"

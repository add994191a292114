"""The targets' sampled binaries kept in the run directory by build-id, and unpacked as a symfs where they
are not installed (no perf needed: ELF files copied from this host)."""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import pytest

from pmuprof.analysis.archive import kept_symfs, needed, rereads
from pmuprof.capture.proc.archive import keep_binaries, wanted
from pmuprof.model import rundir
from pmuprof.model.jsontypes import from_json, to_json
from pmuprof.model.run import FileMap, KeptBinaries, KeptBinary, Run, Target
from pmuprof.tools import elf


def _elf_with_id(tmp: Path, name: str) -> tuple[Path, str]:
    for cand in ("/usr/bin/true", "/bin/true", "/usr/bin/env"):
        found = elf.ident(Path(cand))
        if found and found.build_id:
            dest = tmp / name
            shutil.copy(cand, dest)
            return dest, found.build_id
    pytest.skip("no ELF with a build-id on this host")


def test_wanted_is_the_targets_mapped_binaries_samples_fell_in(tmp_path: Path) -> None:
    exe, bid = _elf_with_id(tmp_path, "server")
    t = Target(
        pid=1,
        label="server",
        exe=str(exe),
        build_id=bid,
        maps=(FileMap(0, 1, 0, str(exe)), FileMap(2, 3, 0, "/lib/libc.so.6"), FileMap(4, 5, 0, "/lib/libz.so")),
    )
    hits = {str(exe): bid, "/lib/libc.so.6": "aa" * 20, "/usr/bin/other-process": "bb" * 20}
    assert wanted((t,), hits) == {str(exe): (bid, exe), "/lib/libc.so.6": ("aa" * 20, Path("/lib/libc.so.6"))}
    replaced = Target(pid=4242, label="server", exe=str(exe), build_id="cc" * 20)
    assert wanted((replaced,), {str(exe): "cc" * 20})[str(exe)] == ("cc" * 20, Path("/proc/4242/exe"))


def test_keep_then_unpack_where_the_binary_is_gone(tmp_path: Path) -> None:
    exe, bid = _elf_with_id(tmp_path, "server")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    kept = keep_binaries(
        run_dir / rundir.BINARIES, {str(exe): (bid, exe), "/nowhere/lib.so": ("dd" * 20, Path("/nowhere/lib.so"))}
    )
    assert [b.path for b in kept.binaries] == [str(exe)] and kept.binaries[0].bytes == exe.stat().st_size
    assert kept.skipped == ("/nowhere/lib.so: not readable as ELF",)
    assert kept.bytes == (run_dir / rundir.BINARIES).stat().st_size
    run = Run(kept_binaries=kept)
    assert from_json(Run, to_json(run)) == run
    (run_dir / rundir.RUN_JSON).write_text(json.dumps(to_json(run)))
    (run_dir / rundir.PERF_DATA).write_bytes(b"")
    assert rereads(run_dir) == run_dir and rereads(run_dir / rundir.PERF_DATA) == run_dir
    assert not needed(kept), "installed here: nothing to unpack"
    with kept_symfs(run_dir, None) as nothing:
        assert nothing is None
    exe.rename(tmp_path / "moved")
    assert needed(kept)
    with kept_symfs(run_dir, None) as symfs:
        copy = symfs / str(exe).lstrip("/")
        assert copy.read_bytes() == (tmp_path / "moved").read_bytes()
    assert not symfs.exists()
    with kept_symfs(run_dir, tmp_path) as users:
        assert users is None, "the user's --symfs wins"
    (run_dir / rundir.STACKS).write_text("")
    with kept_symfs(run_dir, None) as folded:
        assert folded is None, "an analysed run directory is not re-read"


def test_unpack_never_writes_outside_the_symfs(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    payload = tmp_path / "payload"
    payload.write_bytes(b"x")
    with tarfile.open(run_dir / rundir.BINARIES, "w:gz") as tar:
        tar.add(str(payload), arcname="ee" * 20)
    evil = KeptBinaries(file=rundir.BINARIES, binaries=(KeptBinary(path="/../../escaped", build_id="ee" * 20),))
    (run_dir / rundir.RUN_JSON).write_text(json.dumps(to_json(Run(kept_binaries=evil))))
    with kept_symfs(run_dir, None) as symfs:
        assert symfs is None
    assert not (tmp_path / "escaped").exists()
    (run_dir / rundir.BINARIES).write_bytes(b"damaged")
    with kept_symfs(run_dir, None) as damaged:
        assert damaged is None

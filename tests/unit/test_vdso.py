"""This boot's vdso is kept with a run directory when it is the one recorded, and skipped with why when not."""

from __future__ import annotations

import tarfile
from pathlib import Path

from pmuprof.capture.proc.archive import keep_binaries, wanted
from pmuprof.tools import vdso


def test_this_process_reads_its_own_vdso_and_its_build_id() -> None:
    image = vdso.image()
    assert image is not None and image.startswith(b"\x7fELF") and len(image) <= vdso.MAX_VDSO
    bid = vdso.build_id(image)
    assert bid is not None and len(bid) == 40 and int(bid, 16) >= 0
    assert vdso.build_id(b"not an ELF image") is None


def test_the_recorded_vdso_is_kept_by_its_perf_name(tmp_path: Path) -> None:
    bid = vdso.build_id()
    assert bid
    files = wanted((), {vdso.NAME: bid, "/not/mapped": "00" * 20})
    assert list(files) == [vdso.NAME]  # only what samples fell in and a target maps, or the vdso
    kept = keep_binaries(tmp_path / "binaries.tar.gz", files)
    assert [(b.path, b.build_id) for b in kept.binaries] == [(vdso.NAME, bid)] and not kept.skipped
    with tarfile.open(tmp_path / "binaries.tar.gz") as tar:
        assert tar.extractfile(bid).read() == vdso.image()


def test_another_boots_vdso_is_skipped_with_why(tmp_path: Path) -> None:
    other = "ab" * 20
    kept = keep_binaries(tmp_path / "binaries.tar.gz", wanted((), {vdso.NAME: other}))
    assert not kept.binaries and not (tmp_path / "binaries.tar.gz").exists()
    (why,) = kept.skipped
    assert why.startswith("[vdso]: this boot's vdso is") and "abababababab" in why

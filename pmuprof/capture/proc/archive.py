"""Keep the targets' sampled user binaries in the run directory, by build-id (what `perf archive` bundles)."""

from __future__ import annotations

import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import replace
from pathlib import Path
from collections.abc import Mapping

from ...model import rundir
from ...model.run import KeptBinaries, KeptBinary, KernelSymbols, Run, Target
from ...tools import elf, vdso
from ...tools.perf import read as perfread
from ..lifecycle import Context, Part, Source
from .kernel import keep_kernel_symbols

DEBUG_ROOT = Path("/usr/lib/debug")  # separate debug files by build-id, where perf and gdb look
MAX_BINARY = 1 << 30  # a binary larger than this (after leaving DWARF out) is not copied
MAX_ARCHIVE = 128 * 2**20  # binaries.tar.gz stops growing past this (compressed)
COMPRESS_LEVEL = 1  # seconds matter more than megabytes here: level 6 took 5x as long for 15 % less


def wanted(targets: tuple[Target, ...], hits: Mapping[str, str]) -> dict[str, tuple[str, Path]]:
    """Recorded path -> (build-id perf recorded, file to copy), for the targets' mapped binaries samples fell
    in: the target's exe first (read through /proc/PID/exe when replaced on disk), then by path."""
    mapped: dict[str, Path] = {}
    for t in targets:
        if t.exe:
            mapped.setdefault(t.exe, Path(t.exe))
            if t.build_id and _build_id(Path(t.exe)) != t.build_id:
                mapped[t.exe] = Path(f"/proc/{t.pid}/exe")
        for m in t.maps:
            mapped.setdefault(m.path, Path(m.path))
    if vdso.NAME in hits:
        mapped[vdso.NAME] = Path(vdso.NAME)  # this process's own copy, when it is the one recorded
    return {path: (hits[path], mapped[path]) for path in mapped if path in hits}


def keep_binaries(out: Path, wanted_files: Mapping[str, tuple[str, Path]]) -> KeptBinaries:
    """Write ``out`` (a tar.gz of the binaries, member name = build-id) and say what it holds and skipped."""
    kept: list[KeptBinary] = []
    skipped: list[str] = []
    with (
        tempfile.TemporaryDirectory(prefix="pmuprof-archive-") as tmp,
        tarfile.open(out, "w:gz", compresslevel=COMPRESS_LEVEL) as tar,
    ):
        for path, (build_id, source) in wanted_files.items():
            if out.stat().st_size >= MAX_ARCHIVE:
                skipped.append(f"{path}: the archive reached {MAX_ARCHIVE >> 20} MiB")
                continue
            if path == vdso.NAME:
                copy, why = _vdso_file(build_id, Path(tmp) / build_id)
            else:
                copy, why = _copy_of(source, build_id, Path(tmp) / build_id)
            if copy is None:
                skipped.append(f"{path}: {why}")
                continue
            size = _add(tar, copy, build_id)
            debug = DEBUG_ROOT / ".build-id" / build_id[:2] / f"{build_id[2:]}.debug"
            debug_copy = _copy_of(debug, build_id, Path(tmp) / f"{build_id}.debug")[0] if debug.is_file() else None
            if debug_copy is not None:
                _add(tar, debug_copy, f"{build_id}.debug")
            kept.append(
                KeptBinary(
                    path=path,
                    build_id=build_id,
                    bytes=size,
                    debug_stripped=copy != source,
                    debug_file=str(debug) if debug_copy is not None else "",
                )
            )
    if not kept:
        out.unlink(missing_ok=True)
    return KeptBinaries(
        file=out.name if kept else "",
        bytes=out.stat().st_size if kept else 0,
        binaries=tuple(kept),
        skipped=tuple(skipped),
    )


def _add(tar: tarfile.TarFile, file: Path, name: str) -> int:
    """Add ``file`` as member ``name`` with no owner or time (the same binaries give the same archive)."""
    info = tar.gettarinfo(str(file), arcname=name)
    info.mtime, info.uid, info.gid, info.uname, info.gname, info.mode = 0, 0, 0, "", "", 0o644
    with open(file, "rb") as fh:
        tar.addfile(info, fh)
    return info.size


def _build_id(path: Path) -> str | None:
    found = elf.ident(path)
    return found.build_id if found else None


def _vdso_file(build_id: str, dest: Path) -> tuple[Path | None, str]:
    """This boot's vdso written to ``dest`` when it is the one recorded ((None, why) when not: a 32-bit target's)."""
    image = vdso.image()
    if image is None:
        return None, "this process has no readable vdso"
    found = vdso.build_id(image)
    if found != build_id:
        return None, f"this boot's vdso is {str(found)[:12]}, not the recorded {build_id[:12]}"
    dest.write_bytes(image)
    return dest, ""


def _copy_of(source: Path, build_id: str, scratch: Path) -> tuple[Path | None, str]:
    """The file to archive: ``source`` itself, or a copy without DWARF when it has some and objcopy is
    installed (a server with full debuginfo is 300 MB, 30 MB without); (None, why) when it cannot be kept."""
    found = _build_id(source)
    if found != build_id:
        return None, (
            "not readable as ELF"
            if found is None
            else f"its build-id here is {found[:12]}, not the recorded {build_id[:12]} (replaced on disk)"
        )
    try:
        size = source.stat().st_size
        has_dwarf = elf.ElfFile(source).section(".debug_info") is not None
    except (OSError, ValueError):
        return None, "not readable"
    objcopy = shutil.which("objcopy")
    if has_dwarf and objcopy:
        try:
            done = subprocess.run(
                [objcopy, "--strip-debug", str(source), str(scratch)],
                capture_output=True,
                stdin=subprocess.DEVNULL,
                timeout=300,
            )
        except (OSError, subprocess.TimeoutExpired):
            done = None
        if done is not None and done.returncode == 0 and scratch.is_file():
            source, size = scratch, scratch.stat().st_size
    if size > MAX_BINARY:
        return None, f"larger than {MAX_BINARY >> 30} GiB"
    return source, ""


DISK_NOT_KEPT = "kallsyms.gz and binaries.tar.gz not kept: the disk was full (a report on this host needs neither)"
SHARED_NO_KALLSYMS = "left out: --share (kernel addresses stay private)"


def keep_for_report(out_dir: Path, perf: str, run: Run, perf_data_kept: bool = True, shared: bool = False) -> Run:
    """``run`` with what a report elsewhere needs kept beside perf.data: the kernel's symbols of this boot
    and the sampled user binaries (nothing when perf.data itself is not kept: nothing would re-read it).
    ``shared`` (a run directory other users may read): not the kernel's symbols, which /proc hides from them."""
    if not perf_data_kept:
        return run
    data = out_dir / rundir.PERF_DATA
    hits = perfread.build_ids(perf, data, hits=True) if data.is_file() else {}
    return replace(
        run,
        kernel_symbols=KernelSymbols(why_not=SHARED_NO_KALLSYMS)
        if shared
        else keep_kernel_symbols(out_dir / rundir.KALLSYMS),
        kept_binaries=keep_binaries(out_dir / rundir.BINARIES, wanted(run.targets, hits)),
    )


class Archive(Source):
    """The kept-binaries source: nothing to do until perf stops, then what a report on another host needs
    beside perf.data (its kernel symbols and sampled binaries), unless perf.data itself is not kept."""

    name = "archive"

    @classmethod
    def of(cls, ctx: Context) -> Archive | None:
        return cls() if ctx.opts.keep_perf_data else None

    def stop(self, ctx: Context) -> Part:
        out = ctx.window.outcome
        if out is not None and out.stopped_by == "disk":  # the copies would take the last free space
            return Part(self.name, warnings=(DISK_NOT_KEPT,))
        kept = keep_for_report(ctx.out_dir, ctx.perf, ctx.run, shared=ctx.opts.share)
        return Part(
            self.name,
            fields={"kernel_symbols": kept.kernel_symbols, "kept_binaries": kept.kept_binaries},
            files=(rundir.KALLSYMS, rundir.BINARIES),
        )

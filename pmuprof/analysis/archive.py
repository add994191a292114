"""Re-read a run directory's perf.data where its binaries are not installed: the copies it kept, as a symfs."""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import shutil
import tarfile
import tempfile
import zlib
from dataclasses import replace
from pathlib import Path
from collections.abc import Iterator

from .. import infile, outfile
from ..errors import InputError
from ..model import rundir
from ..model.analysis import Analysis
from ..model.run import KeptBinaries
from ..tools import elf, vdso
from ..tools.native.perfdata import expands_inline, inline_wanted, perfdata_path
from .inline import reader_declined

MAX_MEMBER = 1 << 30  # a member larger than this is not unpacked (capture keeps none larger)
MAX_MEMBERS = 1000  # members read at most: a capture keeps two a binary (the copy and its symbols)
MAX_INFLATED = 2 << 30  # bytes inflated at most, in all: a capture's archive holds a few hundred MiB
# inflated / compressed bytes at most: pmuprof's own archives measure 2.1 to 2.8 (gzip level 1 of ELF files);
# RATIO_SLACK lets a small archive's headers and padding through
MAX_RATIO, RATIO_SLACK = 20, 1 << 20


def rereads(path: Path) -> Path | None:
    """The run directory whose perf.data reading ``path`` folds again (None: nothing is re-read there)."""
    if rundir.is_run_dir(path) and (not (path / rundir.STACKS).is_file() or folded_without_inline(path)):
        return path
    if path.is_file() and rundir.is_run_dir(path.parent) and path.name == rundir.PERF_DATA:
        return path.parent
    return None


def folded_without_inline(run_dir: Path) -> bool:
    """The run directory's stacks.folded came from its perf.data without inline frames (read through perf
    script: pmuprof-perfdata was not found at capture), and reading it again here adds them: pmuprof-perfdata is built, inline chains are wanted, and the binaries that ran are installed with
    their build-ids (the kept copies carry no DWARF). Such stacks name no inlined acquirer, so the latch
    table can only say "page latch or index tree latch" where the addresses name one."""
    if not (run_dir / rundir.STACKS).is_file() or not (run_dir / rundir.PERF_DATA).is_file():
        return False
    try:
        analysis = rundir.read_typed(run_dir / rundir.ANALYSIS, Analysis)
    except InputError:
        return False  # the report of the stacks says the file is damaged
    if analysis is None or not analysis.reader_argv or expands_inline(analysis.reader_argv):
        return False
    if reader_declined(analysis):  # DWARF call graphs, a compressed file, ...: it would decline again
        return False
    if not inline_wanted() or perfdata_path() is None:
        return False
    kept = rundir.read_run(run_dir).kept_binaries
    return kept is None or not needed(kept)


def needed(kept: KeptBinaries) -> bool:
    """Some kept binary is not installed here with the build-id that ran."""
    for b in kept.binaries:
        if b.path == vdso.NAME:
            if vdso.build_id() != b.build_id:  # recorded on another boot: only the kept image names its frames
                return True
            continue
        found = elf.ident(Path(b.path))
        if found is None or found.build_id != b.build_id:
            return True
    return False


@contextlib.contextmanager
def kept_symfs(
    path: Path, user_symfs: Path | None, refold: bool = False, notes: list[str] | None = None
) -> Iterator[Path | None]:
    """A temporary symfs (private: mode 0700) holding the kept copies at their recorded paths, while ``path``
    is read (``refold``: a run directory folded again even when it holds stacks.folded); None (nothing to do)
    when the user gave --symfs, nothing is re-read, nothing was kept, or all is here. What was not unpacked,
    and why, goes to ``notes``."""
    run_dir = (path if refold and rundir.is_run_dir(path) else rereads(path)) if user_symfs is None else None
    if run_dir is not None:
        rundir.check_received(run_dir)
    kept = rundir.read_run(run_dir).kept_binaries if run_dir is not None else None
    archive = rundir.kept_file(run_dir, kept.file if kept is not None else "", rundir.BINARIES, notes)
    if archive is None or kept is None or not needed(kept):
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="pmuprof-symfs-") as tmp:
        yield Path(tmp) if _unpack(archive, kept, Path(tmp), notes if notes is not None else []) else None


class _Inflated(io.RawIOBase):
    """The bytes of a gzip stream, at most ``limit`` of them (past it: ``TooMuch``)."""

    def __init__(self, source: io.BufferedIOBase, limit: int) -> None:
        self.source, self.limit, self.read_bytes = source, limit, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self.source.read(len(buffer))
        self.read_bytes += len(data)
        if self.read_bytes > self.limit:
            raise TooMuch(f"it inflates past {self.limit >> 20} MiB")
        buffer[: len(data)] = data
        return len(data)


class TooMuch(Exception):
    """An archive past one of its bounds (bytes inflated, members)."""


def _unpack(archive: Path, kept: KeptBinaries, root: Path, notes: list[str]) -> int:
    """Write each kept member at root/<recorded path> (names come from run.json), within the bounds: members,
    bytes inflated (in all, and as a ratio of the archive's size), free disk above pmuprof's reserve; how many
    were written. A bound reached stops the unpacking with a note; what was written whole is used."""
    paths = {b.build_id: b.path for b in kept.binaries}
    paths.update({f"{b.build_id}.debug": b.debug_file for b in kept.binaries if b.debug_file})
    written, dest = 0, None
    try:
        with os.fdopen(infile.open_evidence(archive, infile.ANY_SIZE), "rb") as raw:
            limit = min(MAX_INFLATED, MAX_RATIO * os.fstat(raw.fileno()).st_size + RATIO_SLACK)
            stream = _Inflated(gzip.GzipFile(fileobj=raw), limit)
            with tarfile.open(fileobj=stream, mode="r|") as tar:
                for count, member in enumerate(tar, 1):
                    if count > MAX_MEMBERS:
                        raise TooMuch(f"it holds more than {MAX_MEMBERS} members")
                    dest = _destination(root, paths.get(member.name), member)
                    if dest is None:
                        continue
                    if member.size > limit - stream.read_bytes:
                        raise TooMuch(f"it inflates past {limit >> 20} MiB ({member.size >> 20} MiB in {member.name})")
                    _extract(tar, member, dest)
                    written, dest = written + 1, None
    except TooMuch as err:
        notes.append(f"{rundir.BINARIES}: unpacking stopped, {err}; {written} binaries unpacked")
    except (tarfile.TarError, OSError, EOFError, zlib.error) as err:
        notes.append(f"{rundir.BINARIES}: not unpacked ({err})")
        written = 0
    if dest is not None:
        dest.unlink(missing_ok=True)  # the member being written when a bound was reached
    return written


def _destination(root: Path, path: str | None, member: tarfile.TarInfo) -> Path | None:
    """Where a kept member goes (None: not a member to unpack)."""
    if path is None or not member.isfile() or member.size > MAX_MEMBER:
        return None
    dest = (root / path.lstrip("/")).resolve()
    return dest if root.resolve() in dest.parents and not os.path.lexists(dest) else None


def _extract(tar: tarfile.TarFile, member: tarfile.TarInfo, dest: Path) -> None:
    """One member written at ``dest``, when the disk keeps pmuprof's reserve after it."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    if outfile.free_above_reserve(dest.parent) < member.size:
        raise TooMuch(f"{member.size >> 20} MiB more would leave less free disk in {dest.parent} than pmuprof keeps")
    src = tar.extractfile(member)
    if src is None:
        return
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with src, os.fdopen(fd, "wb") as out:
        shutil.copyfileobj(src, out, 1 << 20)


def with_symfs(options, symfs: Path | None):
    """pipeline.Options whose binaries are looked up under ``symfs`` first (unchanged when None)."""
    return options if symfs is None else replace(options, lookup=replace(options.lookup, symfs=symfs))

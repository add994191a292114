"""Re-read a run directory's perf.data where its binaries are not installed: the copies it kept, as a symfs."""

from __future__ import annotations

import contextlib
import shutil
import tarfile
import tempfile
from dataclasses import replace
from pathlib import Path
from collections.abc import Iterator

from ..errors import InputError
from ..model import rundir
from ..model.analysis import Analysis
from ..model.run import KeptBinaries
from ..tools import elf, vdso
from ..tools.native.perfdata import expands_inline, inline_wanted, perfdata_path
from .inline import reader_declined

MAX_MEMBER = 1 << 30  # a member larger than this is not unpacked (capture keeps none larger)


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
def kept_symfs(path: Path, user_symfs: Path | None, refold: bool = False) -> Iterator[Path | None]:
    """A temporary symfs holding the kept copies at their recorded paths, while ``path`` is read (``refold``:
    a run directory folded again even when it holds stacks.folded); None (nothing to do) when the user gave
    --symfs, nothing is re-read, nothing was kept, or all is here."""
    run_dir = (path if refold and rundir.is_run_dir(path) else rereads(path)) if user_symfs is None else None
    kept = rundir.read_run(run_dir).kept_binaries if run_dir is not None else None
    archive = run_dir / kept.file if run_dir is not None and kept is not None and kept.file else None
    if kept is None or archive is None or not archive.is_file() or not needed(kept):
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="pmuprof-symfs-") as tmp:
        yield Path(tmp) if _unpack(archive, kept, Path(tmp)) else None


def _unpack(archive: Path, kept: KeptBinaries, root: Path) -> int:
    """Write each kept member at root/<recorded path>; how many were written (names come from run.json)."""
    paths = {b.build_id: b.path for b in kept.binaries}
    paths.update({f"{b.build_id}.debug": b.debug_file for b in kept.binaries if b.debug_file})
    written = 0
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for member in tar:
                path = paths.get(member.name)
                if path is None or not member.isfile() or member.size > MAX_MEMBER:
                    continue
                dest = (root / path.lstrip("/")).resolve()
                if root.resolve() not in dest.parents:
                    continue
                dest.parent.mkdir(parents=True, exist_ok=True)
                src = tar.extractfile(member)
                if src is None:
                    continue
                with src, open(dest, "wb") as out:
                    shutil.copyfileobj(src, out)
                written += 1
    except (tarfile.TarError, OSError, EOFError):
        return 0
    return written


def with_symfs(options, symfs: Path | None):
    """pipeline.Options whose binaries are looked up under ``symfs`` first (unchanged when None)."""
    return options if symfs is None else replace(options, lookup=replace(options.lookup, symfs=symfs))

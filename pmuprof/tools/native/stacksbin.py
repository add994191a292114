"""The folder's stacks as arrays (pmuprof-fold / pmuprof-perfdata ``--stacks-bin``), read into a Stacks.

The file (native/lib/write.c): magic ``PMFSTK2\\n``; u64 string count, string bytes, stack count, id
count; u32 length of each string, then their bytes (a name may hold any byte, NUL included); u32
frame ids of every stack, root first; u32 length and u64 count per stack. Reading it costs O(strings + ids): no Python object per frame occurrence.
Folded from perf script text, the sample table follows: magic ``PMFSMP1\\n``, u64 entry count, then
u32 row, i32 tid, i64 second and u64 count columns (model/samples.py).
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from collections.abc import Iterator

import numpy as np

from ...errors import InputError
from ...model.folded import bad_line, leading_headers, load_folded
from ...model.frametable import FrameTable
from ...model.samples import Samples
from ...model.stacks import Stacks, id_dtype
from ...paths import fold_path
from .. import proc as proc_tools

MAGIC = b"PMFSTK2\n"
SAMPLES_MAGIC = b"PMFSMP1\n"
BAD_LINE = 3
MAX_S = 3600  # parsing a folded file of tens of GB
_ID_BLOCK = 1 << 20  # frame ids read per block
_NAME_BLOCK = 1 << 16  # strings decoded per block


def read_stacks_bin(path: Path) -> Stacks:
    """A Stacks from the file, its frame table reduced to the strings the stacks use."""
    return read_fold_bin(path)[0]


class _Reader:
    """Sections of the file read one after another straight into arrays (the file is never held whole)."""

    def __init__(self, f, path: Path, size: int) -> None:
        self.f, self.path, self.left = f, path, size

    def array(self, dtype, count: int, what: str) -> np.ndarray:
        need = np.dtype(dtype).itemsize * count
        if need > self.left:
            raise InputError(f"{self.path}: {what} is cut short", "rebuild the native tools (make -C native)")
        out = np.fromfile(self.f, dtype=dtype, count=count) if count else np.zeros(0, dtype)
        if len(out) != count:
            raise InputError(f"{self.path}: {what} is cut short", "rebuild the native tools (make -C native)")
        self.left -= need
        return out

    def ids(self, count: int, nstr: int) -> np.ndarray:
        """The stacks' u32 frame ids, checked below the string count, read a block at a time into
        the Stacks' own id type (uint16 for a small frame table: never an int32 copy beside it)."""
        if nstr >= 2**31:
            raise InputError(f"{self.path}: the string table is too large", "rebuild the native tools (make -C native)")
        out: np.ndarray = np.empty(count, dtype=id_dtype(nstr))
        for lo in range(0, count, _ID_BLOCK):
            part = self.array(np.uint32, min(_ID_BLOCK, count - lo), "the stacks")
            if len(part) and int(part.max()) >= nstr:
                raise InputError(
                    f"{self.path}: a frame id is out of range", "rebuild the native tools (make -C native)"
                )
            out[lo : lo + len(part)] = part
        return out

    def skip(self, count: int, what: str) -> int:
        """Step over ``count`` bytes (read later, by ``names``); where they start."""
        if count > self.left:
            raise InputError(f"{self.path}: {what} is cut short", "rebuild the native tools (make -C native)")
        at = self.f.tell()
        self.f.seek(count, 1)
        self.left -= count
        return at

    def names(self, at: int, lengths: np.ndarray, used: np.ndarray) -> FrameTable | list[str]:
        """The used strings of the table starting at ``at``, read a block at a time (the table's bytes are
        never held whole beside the names): a FrameTable when they are ASCII, else a list of them."""
        pieces: list[str] = []
        for chunk, sizes, keep in self._blocks(at, lengths, used):
            if not chunk.isascii():
                return self._decoded(at, lengths, used)
            if len(keep) < len(sizes):
                ends = np.cumsum(sizes)
                chunk = b"".join(chunk[e - n : e] for e, n in zip(ends[keep].tolist(), sizes[keep].tolist()))
            pieces.append(chunk.decode("ascii"))
        text = "".join(pieces)
        del pieces
        return FrameTable(text, np.cumsum(lengths[used]))

    def _decoded(self, at: int, lengths: np.ndarray, used: np.ndarray) -> list[str]:
        """The used strings as a list (UTF-8; bytes that are not: backslash escapes)."""
        out: list[str] = []
        for chunk, sizes, keep in self._blocks(at, lengths, used):
            ends = np.cumsum(sizes)
            out += [
                chunk[e - n : e].decode("utf-8", "backslashreplace")
                for e, n in zip(ends[keep].tolist(), sizes[keep].tolist())
            ]
        return out

    def _blocks(self, at: int, lengths: np.ndarray, used: np.ndarray) -> Iterator[tuple[bytes, np.ndarray, np.ndarray]]:
        """Per block of strings: their bytes, their lengths, and which of them the stacks use."""
        for lo in range(0, len(lengths), _NAME_BLOCK):
            sizes = lengths[lo : lo + _NAME_BLOCK]
            self.f.seek(at)
            chunk = self.f.read(int(sizes.sum()))
            at += len(chunk)
            yield chunk, sizes, np.flatnonzero(used[lo : lo + _NAME_BLOCK])

    def raw(self, count: int, what: str) -> bytes:
        if count > self.left:
            raise InputError(f"{self.path}: {what} is cut short", "rebuild the native tools (make -C native)")
        out = self.f.read(count)
        self.left -= len(out)
        return out


def _samples(rd: _Reader) -> Samples | None:
    """The sample table after the stacks (None when the file ends with the stacks)."""
    if not rd.left:
        return None
    if rd.raw(8, "the sample table") != SAMPLES_MAGIC:
        raise InputError(
            f"{rd.path}: not a pmuprof stacks file (bad sample table)", "rebuild the native tools (make -C native)"
        )
    n = int(rd.array(np.uint64, 1, "the sample table")[0])
    if rd.left != 24 * n:
        raise InputError(f"{rd.path}: the sample table is cut short", "rebuild the native tools (make -C native)")
    cols = [rd.array(dt, n, "the sample table") for dt in (np.uint32, np.int32, np.int64, np.uint64)]
    for col in cols:  # read for this table only: shared by it, not copied
        col.setflags(write=False)
    return Samples.build(*cols)


def read_fold_bin(path: Path) -> tuple[Stacks, Samples | None]:
    """The stacks and, when the folder wrote one, the sample table."""
    with open(path, "rb") as f:
        rd = _Reader(f, Path(path), Path(path).stat().st_size)
        if rd.left < 40 or rd.raw(8, "the header") != MAGIC:
            raise InputError(f"{path}: not a pmuprof stacks file", "rebuild the native tools (make -C native)")
        nstr, nbytes, nst, nids = (int(v) for v in rd.array(np.uint64, 4, "the header"))
        slen = rd.array(np.uint32, nstr, "the string table").astype(np.int64)
        if int(slen.sum()) != nbytes:
            raise InputError(f"{path}: the string table is damaged", "rebuild the native tools (make -C native)")
        blob_at = rd.skip(nbytes, "the string table")
        ids = rd.ids(nids, nstr)
        lengths = rd.array(np.uint32, nst, "the stacks").astype(np.int64)
        counts = rd.array(np.uint64, nst, "the stacks").astype(np.int64)
        samples = _samples(rd)
        used = np.zeros(nstr, dtype=bool)
        used[ids] = True
        frames = rd.names(blob_at, slen, used)
    if not used.all():  # renumbered to the strings the stacks use, a block at a time, in place
        remap = (np.cumsum(used) - 1).astype(ids.dtype)
        for lo in range(0, nids, 1 << 20):
            ids[lo : lo + (1 << 20)] = remap[ids[lo : lo + (1 << 20)]]
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    return Stacks(frames, ids, offsets, counts), samples


def load_folded_stacks(path: Path) -> tuple[Stacks, dict[str, str]]:
    """A folded file's stacks and its leading ``# key: value`` headers; pmuprof-fold parses the
    stack lines when it is built (O(distinct stacks) memory), Python otherwise."""
    binary = fold_path()
    if binary is None:
        stacks, headers = load_folded(path)
        return Stacks.of(stacks), headers
    with (
        tempfile.TemporaryDirectory(prefix="pmuprof-folded-") as tmp,
        open(path, "rb") as src,
        open(Path(tmp) / "err", "w+b") as err,
    ):
        out = Path(tmp) / "stacks.bin"
        proc = subprocess.Popen(
            [str(binary), "--folded", "--stacks-bin", str(out)], stdin=src, stdout=subprocess.DEVNULL, stderr=err
        )
        try:
            with proc_tools.Watchdog((proc,), proc_tools.stall_s(), MAX_S) as dog:
                proc.wait()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        err.seek(0)
        message = err.read().decode("utf-8", "replace")
        if dog.fired:
            raise InputError(f"{path}: pmuprof-fold {dog.fired} reading it", "check the file is a folded profile")
        if proc.returncode == BAD_LINE:
            lineno, _, why = message.partition("line ")[2].partition(": ")
            raise bad_line(str(path), int(lineno) if lineno.isdigit() else 0, why)
        if proc.returncode != 0:
            stacks, headers = load_folded(path)  # the Python parser says what is wrong, or reads it
            return Stacks.of(stacks), headers
        return read_stacks_bin(out), leading_headers(path)

"""The folder's stacks as arrays (pmuprof-fold / pmuprof-perfdata ``--stacks-bin``), read into a Stacks.

The file (native/fold/write.c): magic ``PMFSTK2\\n``; u64 string count, string bytes, stack count, id
count; u32 length of each string, then their bytes (a name may hold any byte, NUL included); u32
frame ids of every stack, root first; u32 length and u64 count per stack. Reading it costs O(strings + ids): no Python object per frame occurrence.
Folded from perf script text, the sample table follows: magic ``PMFSMP1\\n``, u64 entry count, then
u32 row, i32 tid, i64 second and u64 count columns (model/samples.py).
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import numpy as np

from ...errors import InputError
from ...model.folded import bad_line, leading_headers, load_folded
from ...model.samples import Samples
from ...model.stacks import Stacks
from ...paths import fold_path
from .. import proc as proc_tools

MAGIC = b"PMFSTK2\n"
SAMPLES_MAGIC = b"PMFSMP1\n"
BAD_LINE = 3
MAX_S = 3600  # parsing a folded file of tens of GB


def read_stacks_bin(path: Path) -> Stacks:
    """A Stacks from the file, its frame table reduced to the strings the stacks use."""
    return read_fold_bin(path)[0]


def _samples_at(raw: bytes, at: int, path: Path) -> Samples | None:
    """The sample table starting at ``at`` (None when the file ends with the stacks)."""
    if at == len(raw):
        return None
    if raw[at:at + 8] != SAMPLES_MAGIC or len(raw) < at + 16:
        raise InputError(f"{path}: not a pmuprof stacks file (bad sample table)", "rebuild the native tools (make -C native)")
    n = int(np.frombuffer(raw, dtype=np.uint64, count=1, offset=at + 8)[0])
    at += 16
    if len(raw) != at + 24 * n:
        raise InputError(f"{path}: the sample table is cut short", "rebuild the native tools (make -C native)")
    rows = np.frombuffer(raw, dtype=np.uint32, count=n, offset=at)
    tids = np.frombuffer(raw, dtype=np.int32, count=n, offset=at + 4 * n)
    secs = np.frombuffer(raw, dtype=np.int64, count=n, offset=at + 8 * n)
    counts = np.frombuffer(raw, dtype=np.uint64, count=n, offset=at + 16 * n)
    return Samples.build(rows, tids, secs, counts.astype(np.int64))


def read_fold_bin(path: Path) -> tuple[Stacks, Samples | None]:
    """The stacks and, when the folder wrote one, the sample table."""
    raw = Path(path).read_bytes()
    if raw[:8] != MAGIC or len(raw) < 40:
        raise InputError(f"{path}: not a pmuprof stacks file", "rebuild the native tools (make -C native)")
    nstr, nbytes, nst, nids = (int(v) for v in np.frombuffer(raw, dtype=np.uint64, count=4, offset=8))
    at = 40
    slen = np.frombuffer(raw, dtype=np.uint32, count=nstr, offset=at).astype(np.int64)
    at += 4 * nstr
    ends = np.cumsum(slen).tolist()
    blob = raw[at:at + nbytes]
    strings = [blob[e - n:e] for e, n in zip(ends, slen.tolist())]
    at += nbytes
    ids = np.frombuffer(raw, dtype=np.uint32, count=nids, offset=at)
    at += 4 * nids
    lengths = np.frombuffer(raw, dtype=np.uint32, count=nst, offset=at).astype(np.int64)
    at += 4 * nst
    counts = np.frombuffer(raw, dtype=np.uint64, count=nst, offset=at).astype(np.int64)
    used = np.zeros(nstr, dtype=bool)
    used[ids] = True
    remap = (np.cumsum(used) - 1).astype(np.int32)
    frames = [strings[i].decode("utf-8", "backslashreplace") for i in np.flatnonzero(used).tolist()]
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    return Stacks(frames, remap[ids], offsets, counts), _samples_at(raw, at + 8 * nst, Path(path))


def load_folded_stacks(path: Path) -> tuple[Stacks, dict[str, str]]:
    """A folded file's stacks and its leading ``# key: value`` headers; pmuprof-fold parses the
    stack lines when it is built (O(distinct stacks) memory), Python otherwise."""
    binary = fold_path()
    if binary is None:
        stacks, headers = load_folded(path)
        return Stacks.of(stacks), headers
    with tempfile.TemporaryDirectory(prefix="pmuprof-folded-") as tmp, open(path, "rb") as src, \
            open(Path(tmp) / "err", "w+b") as err:
        out = Path(tmp) / "stacks.bin"
        proc = subprocess.Popen([str(binary), "--folded", "--stacks-bin", str(out)], stdin=src,
                                stdout=subprocess.DEVNULL, stderr=err)
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

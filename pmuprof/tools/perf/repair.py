"""Finish the header of a perf.data that perf could not close (killed, disk full): its samples stay readable."""

from __future__ import annotations

import contextlib
import mmap
import os
import secrets
import shutil
import struct
import tempfile
from pathlib import Path
from collections.abc import Iterator

from ... import outfile
from ...errors import InputError, ResourceError

MAGIC = b"PERFILE2"
_DATA_SECTION = 40  # perf_file_header: magic, size, attr_size, attrs{offset,size}, data{offset,size}
_HEADER = struct.Struct("<QQ")


def impossible_header(path: Path) -> str:
    """Why no file can match this perf.data's header ("" when it could): a data section ending past 2^64
    bytes, on which perf 6.1's perf script loops at full CPU instead of failing (pmuprof-perfdata's exit 5)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(_DATA_SECTION + _HEADER.size)
    except OSError:
        return ""
    if len(head) < _DATA_SECTION + _HEADER.size or not head.startswith(MAGIC):
        return ""
    offset, size = _HEADER.unpack_from(head, _DATA_SECTION)
    if offset + size < 2**64:
        return ""
    return f"corrupt header: a data section of {size} bytes at offset {offset} would end past 2^64 bytes"


def corrupt_header(path: Path, why: str) -> InputError:
    """The one line for a perf.data no reader is to try (perf script would loop on it)."""
    return InputError(
        f"{path}: not a usable perf.data: {why}", "re-record it (perf script is not tried: it loops on such a header)"
    )


def unfinished_size(path: Path) -> int:
    """Bytes of samples after the header when perf left the data size at 0; 0 for a finished file."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(_DATA_SECTION + _HEADER.size)
            length = os.fstat(fh.fileno()).st_size
    except OSError:
        return 0
    if len(head) < _DATA_SECTION + _HEADER.size or not head.startswith(MAGIC):
        return 0
    offset, size = _HEADER.unpack_from(head, _DATA_SECTION)
    return length - offset if size == 0 and 0 < offset < length else 0


_FEATURES = 72  # after the data and event_types sections: adds_features, a 256-bit map
_FEATURE_BYTES = 32


def _features_missing(bits: bytes, data_end: int, length: int) -> bool:
    """Whether the header names optional features (build-ids, host facts) whose table is not in the file:
    perf stopped by a full disk writes the header, then fails to write the table after the samples."""
    count = sum(bin(b).count("1") for b in bits)
    return count > 0 and data_end + count * _HEADER.size > length


_RECORD = struct.Struct("<IHH")  # perf_event_header: type, misc, size


def _whole_records(fh, offset: int, size: int) -> int:
    """The bytes of the data section up to its last whole record: perf script dies of SIGBUS on a record
    cut off by the end of the file (where a full disk or SIGKILL stopped perf's write)."""
    if size <= 0:
        return 0
    with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mem:
        pos, end = offset, offset + size
        while pos + _RECORD.size <= end:
            step = _RECORD.unpack_from(mem, pos)[2]
            if step < _RECORD.size or pos + step > end:
                break
            pos += step
    return pos - offset


def _plan(fh) -> tuple[int, int, bool] | None:
    """(data offset, bytes of whole records, drop the feature table) for an unfinished perf.data open in
    ``fh``; None when perf closed it (nothing to repair) or it is not a perf.data."""
    head = fh.read(_FEATURES + _FEATURE_BYTES)
    length = os.fstat(fh.fileno()).st_size
    if len(head) < _FEATURES + _FEATURE_BYTES or not head.startswith(MAGIC):
        return None
    offset, size = _HEADER.unpack_from(head, _DATA_SECTION)
    if not 0 < offset < length:
        return None
    claimed = size if size and offset + size <= length else length - offset
    drop = _features_missing(head[_FEATURES:], offset + claimed, length)
    if size and not drop and claimed == size:
        return None  # perf closed it: nothing to repair
    whole = _whole_records(fh, offset, claimed)
    return (offset, whole, drop) if whole != size or drop else None


def needs_finish(path: Path) -> bool:
    """Whether ``path`` is a perf.data perf could not close (finish_header would change it); read only."""
    try:
        with open(path, "rb") as fh:
            return _plan(fh) is not None
    except (OSError, ValueError):
        return False


def finish_header(path: Path) -> int:
    """Make an unfinished perf.data readable; return the bytes of samples it holds (0: nothing done).

    perf writes the data size only when it stops cleanly, so a perf killed by SIGKILL (or stopped by a
    full disk) leaves samples that `perf script` ignores: the size is set to the whole records the file
    holds (perf script dies of SIGBUS on a last, partial one). A perf that met a full disk writes the
    header but not the feature table after the samples: the features are dropped too (the samples do
    not need them; build-ids then come from the binaries). Only for a file pmuprof's own capture wrote:
    a run directory read later is evidence, repaired on a copy (``finished``).
    """
    try:
        with open(path, "r+b") as fh:
            plan = _plan(fh)
            if plan is None:
                return 0
            offset, size, drop = plan
            fh.seek(_DATA_SECTION)
            fh.write(_HEADER.pack(offset, size))
            if drop:
                fh.seek(_FEATURES)
                fh.write(bytes(_FEATURE_BYTES))
    except (OSError, ValueError):
        return 0
    return size


@contextlib.contextmanager
def _scratch(work_dir: Path | None) -> Iterator[Path]:
    if work_dir is not None:
        yield outfile.ensure_dir(work_dir)
        return
    with tempfile.TemporaryDirectory(prefix="pmuprof-repair-") as tmp:  # mode 0700
        yield Path(tmp)


def _copy(path: Path, dest: Path) -> None:
    """``path`` copied to the new file ``dest`` (O_EXCL, mode 0600), when its filesystem keeps its reserve."""
    size = path.stat().st_size
    free = outfile.free_above_reserve(dest.parent)
    if free < size:
        raise ResourceError(
            f"not enough free disk in {dest.parent} to repair a copy of {path}: {size / 2**20:.0f} MiB needed, "
            f"{max(free, 0) / 2**20:.0f} MiB free above the reserve pmuprof keeps",
            "free space, or write the report with -o on a larger filesystem",
        )
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with open(path, "rb") as src, os.fdopen(fd, "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)
    except OSError as err:
        dest.unlink(missing_ok=True)
        raise outfile.os_error(err, dest) from err


@contextlib.contextmanager
def finished(path: Path, work_dir: Path | None = None) -> Iterator[tuple[Path, int]]:
    """``path`` as the readers can read it, and the bytes of samples a repair found (0: none was needed):
    ``path`` itself when perf closed it, else a copy with its header finished (``finish_header``), made in
    ``work_dir`` (the report's output directory; a private temporary directory when None) and removed on
    leaving. The original is never opened for writing: a run directory is evidence."""
    if not needs_finish(path):
        yield path, 0
        return
    with _scratch(work_dir) as where:
        copy = where / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"  # outfile's temp names
        _copy(path, copy)
        try:
            yield copy, finish_header(copy)
        finally:
            copy.unlink(missing_ok=True)

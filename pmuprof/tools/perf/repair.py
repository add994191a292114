"""Finish the header of a perf.data that perf could not close (killed, disk full): its samples stay readable."""

from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path

from ...errors import InputError

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


def finish_header(path: Path) -> int:
    """Make an unfinished perf.data readable; return the bytes of samples it holds (0: nothing done).

    perf writes the data size only when it stops cleanly, so a perf killed by SIGKILL (or stopped by a
    full disk) leaves samples that `perf script` ignores: the size is set to the whole records the file
    holds (perf script dies of SIGBUS on a last, partial one). A perf that met a full disk writes the
    header but not the feature table after the samples: the features are dropped too (the samples do
    not need them; build-ids then come from the binaries).
    """
    try:
        with open(path, "r+b") as fh:
            head = fh.read(_FEATURES + _FEATURE_BYTES)
            length = os.fstat(fh.fileno()).st_size
            if len(head) < _FEATURES + _FEATURE_BYTES or not head.startswith(MAGIC):
                return 0
            offset, size = _HEADER.unpack_from(head, _DATA_SECTION)
            if not 0 < offset < length:
                return 0
            claimed = size if size and offset + size <= length else length - offset
            drop = _features_missing(head[_FEATURES:], offset + claimed, length)
            if size and not drop and claimed == size:
                return 0  # perf closed it: nothing to repair
            size_before, size = size, _whole_records(fh, offset, claimed)
            fixed = size != size_before
            if fixed:
                fh.seek(_DATA_SECTION)
                fh.write(_HEADER.pack(offset, size))
            if drop:
                fh.seek(_FEATURES)
                fh.write(bytes(_FEATURE_BYTES))
    except OSError:
        return 0
    return size if fixed or drop else 0

"""Finish the header of a perf.data that perf could not close (killed, disk full): its samples stay readable."""

from __future__ import annotations

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
    return InputError(f"{path}: not a usable perf.data: {why}",
                      "re-record it (perf script is not tried: it loops on such a header)")


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


def finish_header(path: Path) -> int:
    """Set the data size of an unfinished perf.data to what the file holds; return it (0: nothing done).

    perf writes the size only when it stops cleanly, so a perf killed by SIGKILL (or stopped by a
    full disk) leaves samples that `perf script` ignores. A last, partial record is skipped by perf.
    """
    size = unfinished_size(path)
    if size <= 0:
        return 0
    with open(path, "r+b") as fh:
        fh.seek(_DATA_SECTION)
        offset, _ = _HEADER.unpack(fh.read(_HEADER.size))
        fh.seek(_DATA_SECTION)
        fh.write(_HEADER.pack(offset, size))
    return size

"""Every file pmuprof reads because an input names it is opened here: a regular file, never blocking, bounded."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO
from collections.abc import Iterator

from .outfile import SYSTEM_LINK_DIRS, file_kind

# A binary or debug file larger than this is not read: mysqld's own .debug file is a few hundred MiB.
ELF_MAX_BYTES = 8 << 30
SMALL_MAX_BYTES = 1 << 20  # a pid file, a /proc file: a few bytes or KiB
ANY_SIZE = 1 << 62  # a log read from its tail: its size does not matter, its type does
_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC  # O_NONBLOCK: a FIFO fails fstat's check, never blocks open


class Refused(OSError):
    """A file an input named (a recorded DSO path, a debug link, ...) that is not read; str() is
    "PATH: why", ``why`` the reason alone."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"{path}: {why}")
        self.why = why


def open_fd(path: str | Path, max_bytes: int) -> int:
    """A blocking read-only descriptor of ``path``: a regular file of at most ``max_bytes``, opened without
    waiting on a FIFO or device. Links are followed only when the system (/proc, /dev), root or this user
    made them: another user's link is Refused, like anything but a regular file. OSError when missing."""
    path = str(path)
    try:
        fd = os.open(path, _FLAGS if path.startswith(SYSTEM_LINK_DIRS) else _FLAGS | os.O_NOFOLLOW)
    except OSError as err:
        if err.errno != errno.ELOOP:
            raise
        owner = os.lstat(path).st_uid
        if owner not in (0, os.geteuid()):
            raise Refused(path, f"a symbolic link owned by uid {owner}, not followed") from err
        fd = os.open(path, _FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Refused(path, f"{file_kind(st.st_mode)}, not a regular file: not read")
        if st.st_size > max_bytes:
            raise Refused(path, f"{st.st_size} bytes, more than the {max_bytes} read at most: not read")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def opened(path: str | Path, max_bytes: int) -> Iterator[BinaryIO]:
    """open_fd as a binary file object, closed on leaving."""
    with os.fdopen(open_fd(path, max_bytes), "rb") as fh:
        yield fh


__all__ = ["ANY_SIZE", "ELF_MAX_BYTES", "SMALL_MAX_BYTES", "Refused", "open_fd", "opened"]

"""Every file pmuprof reads because an input names it is opened here: a regular file, never blocking, bounded;
and what makes a directory safe to read from or to let programs write in (no other user can change it)."""

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


def _mine(uid: int) -> bool:
    return uid in (0, os.geteuid())


def _dir_problem(path: Path, st: os.stat_result, sticky_ok: bool) -> str:
    """Why another user could add, rename or replace entries of directory ``path`` ("" when only root and
    this user can)."""
    if not _mine(st.st_uid):
        return f"{path} is owned by uid {st.st_uid}"
    if st.st_mode & 0o022 and not (sticky_ok and st.st_mode & stat.S_ISVTX):
        who = "group and others" if st.st_mode & 0o022 == 0o022 else "group" if st.st_mode & 0o020 else "others"
        return f"{path} is writable by {who} (mode {stat.S_IMODE(st.st_mode):04o})"
    return ""


def swappable(path: str | Path) -> str:
    """Why another user could replace ``path`` (a directory, or a name not made yet) with something of theirs
    ("" when no one but root and this user can): a directory on its way, as written or with links resolved,
    that another user owns, or that group or others may write without the sticky bit (/tmp's bit keeps
    others from renaming root's entries), or a link on its way that another user owns."""
    written = Path(os.path.abspath(path))
    for chain in (written, Path(os.path.realpath(written))):
        for parent in reversed(chain.parents):
            try:
                st = os.lstat(parent)
            except FileNotFoundError:
                break  # made by pmuprof, below what exists
            if stat.S_ISLNK(st.st_mode):
                if not _mine(st.st_uid):
                    return f"{parent} is a symbolic link owned by uid {st.st_uid}"
                continue
            why = _dir_problem(parent, st, sticky_ok=True)
            if why:
                return why
    return ""


def private_dir_problem(path: str | Path) -> str:
    """Why ``path`` is not a directory only root and this user can change ("" when it is): it, or a directory
    on its way, may be changed by another user (``swappable``), or it is not a directory."""
    why = swappable(path)
    if why:
        return why
    try:
        st = os.stat(path)
    except OSError as err:
        return f"{path}: {os.strerror(err.errno or 0)}"
    if not stat.S_ISDIR(st.st_mode):
        return f"{path} is {file_kind(st.st_mode)}, not a directory"
    return _dir_problem(Path(path), st, sticky_ok=False)


def evidence_problem(path: str | Path) -> str:
    """Why a file of a received run directory is not read ("" when it is, or is absent): not a regular file
    (a symbolic link is never followed), or owned by a user other than this one or root."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return ""
    except OSError as err:
        return f"cannot be read: {os.strerror(err.errno or 0)}"
    if stat.S_ISLNK(st.st_mode):
        return f"a symbolic link owned by uid {st.st_uid}, not followed"
    if not stat.S_ISREG(st.st_mode):
        return f"{file_kind(st.st_mode)}, not a regular file"
    if not _mine(st.st_uid):
        return f"owned by uid {st.st_uid}, neither you nor root"
    return ""


def open_evidence(path: str | Path, max_bytes: int) -> int:
    """A read-only descriptor of a file of a received run directory: opened without following a link (its
    last name) or waiting on a FIFO, and only when it is a regular file of this user or root of at most
    ``max_bytes``; else Refused (FileNotFoundError when absent)."""
    try:
        fd = os.open(path, _FLAGS | os.O_NOFOLLOW)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise Refused(str(path), evidence_problem(path) or "a symbolic link, not followed") from err
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Refused(str(path), f"{file_kind(st.st_mode)}, not a regular file")
        if not _mine(st.st_uid):
            raise Refused(str(path), f"owned by uid {st.st_uid}, neither you nor root")
        if st.st_size > max_bytes:
            raise Refused(str(path), f"{st.st_size} bytes, more than the {max_bytes} read at most")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def evidence_bytes(path: str | Path, max_bytes: int = ANY_SIZE) -> bytes | None:
    """A received run directory's file read whole through ``open_evidence`` (None when it is absent)."""
    try:
        fd = open_evidence(path, max_bytes)
    except (FileNotFoundError, NotADirectoryError):
        return None
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


__all__ = [
    "evidence_bytes",
    "ANY_SIZE",
    "ELF_MAX_BYTES",
    "SMALL_MAX_BYTES",
    "Refused",
    "evidence_problem",
    "open_evidence",
    "open_fd",
    "opened",
    "private_dir_problem",
    "swappable",
]

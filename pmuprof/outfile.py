"""Every file pmuprof writes goes through here: regular files atomically, devices/FIFOs in place, no links followed."""

from __future__ import annotations

import contextlib
import errno
import io
import os
import secrets
import stat
from pathlib import Path
from typing import IO
from collections.abc import Iterator

from .errors import PmuprofError, ResourceError, UsageError

# Links pmuprof follows: the system's own (/dev/stdout, /dev/fd/N, /proc/self/fd/N), never a user's.
SYSTEM_LINK_DIRS = ("/dev/", "/proc/")
_DISK_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EFBIG)


def os_error(err: OSError, path: Path | str, doing: str = "write") -> PmuprofError:
    """An OSError on an output path as one line: disk trouble is exit 6, a path that cannot be used exit 2."""
    why = os.strerror(err.errno) if err.errno else str(err)
    if err.errno == errno.EROFS:
        return ResourceError(f"cannot {doing} {path}: {why}", "choose -o on a writable filesystem")
    if err.errno in _DISK_ERRNOS:
        return ResourceError(f"cannot {doing} {path}: {why}", "free space or choose -o on another filesystem")
    if err.errno in (errno.ENOENT, errno.ENOTDIR):
        return UsageError(
            f"cannot {doing} {path}: {why} (a directory on the way is missing)",
            "create the directory first or choose another -o",
        )
    if err.errno == errno.ELOOP:
        return UsageError(
            f"{path} is a symbolic link: pmuprof does not write through links",
            "remove the link or name the file it points to",
        )
    return UsageError(f"cannot {doing} {path}: {why}", "choose an -o you may write to")


RESERVE_SHARE, RESERVE_MIN, RESERVE_MAX = 0.02, 16 << 20, 1 << 30


def disk_reserve(total: int) -> int:
    """Free space pmuprof never uses: 2 % of the filesystem, at least 16 MiB, at most 1 GiB."""
    return int(min(max(total * RESERVE_SHARE, RESERVE_MIN), RESERVE_MAX))


def free_above_reserve(path: Path | str) -> int:
    """Bytes pmuprof may still write on the filesystem holding directory ``path`` (may be negative)."""
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize - disk_reserve(st.f_blocks * st.f_frsize)


def file_kind(mode: int) -> str:
    """What an lstat/fstat mode is, as "a FIFO", "a directory", ... (for one-line errors)."""
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISLNK, "a symbolic link"),
    ):
        if test(mode):
            return name
    return "a regular file" if stat.S_ISREG(mode) else "a special file"


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise os_error(err, path) from err


MAX_LINKS = 40  # as the kernel's own bound on links in one path (ELOOP)


def refuse_foreign_links(path: Path | str) -> None:
    """Refuse an output path that goes through a symbolic link another user owns (a directory on the
    way, or the path itself): pmuprof runs as root, and such a link lets that user choose what root
    writes. Links owned by root or by pmuprof's own user are followed (an admin's own layout)."""
    mine = (0, os.geteuid())
    todo = list(reversed(Path(os.path.abspath(path)).parts[1:]))
    cur, links = Path("/"), 0  # cur never holds a link: ".." is its parent, as the kernel walks
    while todo:
        part = todo.pop()
        if part in (".", ".."):
            cur = cur.parent if part == ".." else cur
            continue
        st = _lstat(cur / part)
        if st is None:
            return  # pmuprof creates the rest
        if not stat.S_ISLNK(st.st_mode):
            cur = cur / part
            continue
        if st.st_uid not in mine:
            raise UsageError(
                f"{cur / part} is a symbolic link owned by uid {st.st_uid}: pmuprof does not "
                "follow another user's link",
                "choose an -o that does not go through it",
            )
        links += 1
        if links > MAX_LINKS:
            raise os_error(OSError(errno.ELOOP, os.strerror(errno.ELOOP)), path)
        target = Path(os.readlink(cur / part))
        todo += reversed(target.parts[1:] if target.is_absolute() else target.parts)
        cur = Path("/") if target.is_absolute() else cur


def in_place(path: Path) -> bool:
    """True when ``path`` is written where it is (a character device, a FIFO, /dev/stdout); False for a
    regular file or a new name (written atomically). Anything else is refused with one line."""
    st = _lstat(path)
    if st is None or stat.S_ISREG(st.st_mode):
        return False
    if stat.S_ISLNK(st.st_mode):
        if not str(path).startswith(SYSTEM_LINK_DIRS):
            raise UsageError(
                f"{path} is a symbolic link: pmuprof does not write through links",
                "remove the link or name the file it points to",
            )
        try:
            st = os.stat(path)
        except OSError as err:
            raise os_error(err, path) from err
        if stat.S_ISREG(st.st_mode):
            return True  # /dev/stdout redirected to a file: write where the shell pointed it
    if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
        return True
    raise UsageError(
        f"{path} is {file_kind(st.st_mode)}: pmuprof writes only regular files, character devices and FIFOs",
        "choose another output name",
    )


def _open_in_place(path: Path) -> int:
    flags = os.O_WRONLY | os.O_CLOEXEC | os.O_NONBLOCK
    if not str(path).startswith(SYSTEM_LINK_DIRS):
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except OSError as err:
        if err.errno == errno.ENXIO:
            raise UsageError(f"{path} is a FIFO with no reader", "start the reader first (e.g. `cat FIFO &`)") from err
        raise os_error(err, path) from err
    os.set_blocking(fd, True)
    if stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
    return fd


def _temp_for(path: Path) -> tuple[Path, int]:
    """A new file next to ``path`` (O_EXCL, never a link), with the mode of the file it will replace."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as err:
        raise os_error(err, path) from err
    old = _lstat(path)
    if old is not None and stat.S_ISREG(old.st_mode):
        with contextlib.suppress(OSError):
            os.fchmod(fd, stat.S_IMODE(old.st_mode))
    return tmp, fd


@contextlib.contextmanager
def open_binary(path: Path | str) -> Iterator[IO[bytes]]:
    """A binary file object for ``path``: a temp file renamed over it on success (a partial file never
    has the final name), or the device/FIFO itself. Write errors are one line (exit 6 for disk)."""
    path = Path(path)
    refuse_foreign_links(path)
    if in_place(path):
        fh = io.FileIO(_open_in_place(path), "wb")
        try:
            yield fh
        except OSError as err:
            raise os_error(err, path) from err
        finally:
            with contextlib.suppress(OSError):
                fh.close()
        return
    tmp, fd = _temp_for(path)
    try:
        with io.FileIO(fd, "wb") as raw, io.BufferedWriter(raw, 1 << 20) as buffered:
            yield buffered
        os.replace(tmp, path)
    except OSError as err:
        raise os_error(err, path) from err
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


@contextlib.contextmanager
def open_text(path: Path | str) -> Iterator[IO[str]]:
    """open_binary as UTF-8 text with '\\n' line ends."""
    with open_binary(path) as raw:
        text = io.TextIOWrapper(raw, encoding="utf-8", newline="\n")
        try:
            yield text
            text.detach()  # flushes into ``raw``, which open_binary closes (and renames)
        except BaseException:
            with contextlib.suppress(Exception):
                text.detach()
            raise


def write_bytes(path: Path | str, data: bytes) -> Path:
    with open_binary(path) as fh:
        fh.write(data)
    return Path(path)


def write_text(path: Path | str, text: str) -> Path:
    return write_bytes(path, text.encode("utf-8", "surrogateescape"))


def ensure_dir(path: Path | str) -> Path:
    """Create an output directory (and its parents); one line when it cannot be."""
    path = Path(path)
    refuse_foreign_links(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError as err:
        raise UsageError(f"{path} exists and is not a directory", "choose another -o") from err
    except OSError as err:
        raise os_error(err, path, "create") from err
    if not path.is_dir():
        raise UsageError(f"{path} exists and is not a directory", "choose another -o")
    return path

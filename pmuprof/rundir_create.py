"""The run directory as pmuprof's own: created new (mode 0700) where no other user can swap it, and the
descriptors of the files the programs it starts write there."""

from __future__ import annotations

import datetime as _dt
import errno
import os
import secrets
import stat
from pathlib import Path

from . import outfile
from .errors import UsageError
from .infile import private_dir_problem, swappable

PRIVATE = 0o700  # the default: perf.data, kallsyms.gz, statement digests and user@db are the caller's alone
SHARED = 0o755  # --share: other local users may read (what would leak is left out, capture/record.py)
WHERE_FIX = "choose -o under a directory only root and you can change (e.g. /var/tmp), or leave -o out"
_CHILD_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def unique_name(prefix: str, now: _dt.datetime | None = None) -> str:
    """``PREFIX-YYYYmmdd-HHMMSS-RANDOM``: a name no other user can guess and make first (32 random bits)."""
    stamp = (now or _dt.datetime.now()).strftime("%Y%m%d-%H%M%S")
    return f"{prefix}-{stamp}-{secrets.token_hex(4)}"


def _usable_existing(path: Path) -> str:
    """Why an existing ``path`` cannot be the run directory ("" when it can: an empty directory of this user
    that no one else may enter, as `mktemp -d` makes)."""
    try:
        st = os.lstat(path)
    except OSError as err:
        return f"cannot be checked: {os.strerror(err.errno or 0)}"
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link: pmuprof creates its run directory itself"
    if not stat.S_ISDIR(st.st_mode):
        return "exists and is not a directory"
    if st.st_uid != os.geteuid():
        return f"exists and is owned by uid {st.st_uid}: pmuprof creates its run directory itself"
    if st.st_mode & 0o077:
        return (
            f"exists with mode {stat.S_IMODE(st.st_mode):04o}: an existing run directory must be yours with "
            "mode 0700 (as `mktemp -d` makes it)"
        )
    try:
        if any(os.scandir(path)):
            return "exists and is not empty"
    except OSError as err:
        return f"cannot be read: {os.strerror(err.errno or 0)}"
    return ""


def check_new(path: Path | str) -> None:
    """Refuse, before anything starts, a run directory pmuprof could not create as its own (one line)."""
    path = Path(path)
    outfile.refuse_foreign_links(path)
    why = swappable(path)
    if why:
        raise UsageError(
            f"cannot use {path} as a run directory: {why}, so another user could replace it while perf writes in it",
            WHERE_FIX,
        )
    if os.path.lexists(path):
        why = _usable_existing(path)
        if why:
            raise UsageError(f"{path} {why}", "choose a new -o directory")


def check_runs_dir(path: Path | str, option: str) -> None:
    """Refuse a directory of runs (watch -o, schedule --dir) that another user could change: they could plant
    run directories there that retention reads and deletes from, or swap one for a link between the check and
    the deletion, and a capture would be refused there at its first trigger (one line, before any work)."""
    why = private_dir_problem(path)
    if why:
        raise UsageError(
            f"cannot keep runs in {path}: {why}, so another user could plant or swap run directories there",
            f"choose {option} under a directory only root and you can change (e.g. /var/lib/pmuprof)",
        )


def _parents(path: Path) -> None:
    """The missing directories above ``path`` (mode 0755 before the umask, as mkdir -p)."""
    missing = []
    for parent in path.parents:
        if os.path.lexists(parent):
            break
        missing.append(parent)
    for parent in reversed(missing):
        try:
            os.mkdir(parent, 0o755)
        except FileExistsError:
            continue
        except OSError as err:
            raise outfile.os_error(err, parent, "create") from err


def create(path: Path | str, shared: bool = False) -> Path:
    """Make the run directory: new (or an empty private one of this user), mode 0700 (0755 when ``shared``),
    owned by this user, where no other user can replace it; refused in one line otherwise."""
    path = Path(path)
    check_new(path)
    _parents(Path(os.path.abspath(path)))
    check_new(path)  # the parents made now are ours; what existed above them was checked again
    try:
        os.mkdir(path, PRIVATE)
    except FileExistsError:
        why = _usable_existing(path)
        if why:
            raise UsageError(f"{path} {why}", "choose a new -o directory") from None
    except OSError as err:
        raise outfile.os_error(err, path, "create") from err
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        if os.fstat(fd).st_uid != os.geteuid():
            raise UsageError(f"{path} changed owner while it was made", "choose a new -o directory")
        os.fchmod(fd, SHARED if shared else PRIVATE)
    finally:
        os.close(fd)
    return path


def open_stream(path: Path | str) -> int:
    """A descriptor of a file of the run directory written as it goes (a program's stderr, perf stat's
    --log-fd, the processlist polls): created mode 0600 or truncated, never through a link, only a regular
    file. The caller closes it."""
    try:
        fd = os.open(path, _CHILD_FLAGS, 0o600)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise UsageError(f"{path} is a symbolic link: pmuprof does not write through links", WHERE_FIX) from err
        raise outfile.os_error(err, path) from err
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UsageError(f"{path} is not a regular file: pmuprof writes only its own files there", WHERE_FIX)
    os.set_blocking(fd, True)
    return fd

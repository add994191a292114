"""Another local user (nobody) for the run-directory tests: code run as that user, a directory all users can
reach (as /tmp), and root-only victim files whose bytes must never change."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

NOBODY = 65534


def need_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root: another user's files are made with setpriv and chown")
    if shutil.which("setpriv") is None:
        pytest.skip("needs setpriv (util-linux) to run code as another user")


def as_nobody(code: str, *args: str) -> subprocess.Popen:
    """``python3 -c code args...`` running as nobody (uid and gid 65534, no supplementary groups)."""
    need_root()
    return subprocess.Popen(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", sys.executable, "-c", code, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run_as_nobody(code: str, *args: str, timeout: float = 60) -> str:
    proc = as_nobody(code, *args)
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err
    return out


def public_dir() -> Path:
    """A new directory like /tmp (mode 1777, root's) that every user reaches: pytest's tmp_path is root's
    alone. The caller removes it."""
    need_root()
    path = Path(tempfile.mkdtemp(prefix="pmuprof-public-", dir="/tmp"))
    path.chmod(0o1777)
    return path


class Victim:
    """A root-only file (mode 0600) another user would like root to overwrite or read."""

    def __init__(self, path: Path, content: bytes) -> None:
        self.path = path
        path.write_bytes(content)
        path.chmod(0o600)
        self.digest, self.mtime = hashlib.sha256(content).hexdigest(), path.stat().st_mtime_ns

    def unchanged(self) -> bool:
        st = self.path.stat()
        same = hashlib.sha256(self.path.read_bytes()).hexdigest() == self.digest
        return same and st.st_mtime_ns == self.mtime and st.st_uid == 0 and st.st_mode & 0o777 == 0o600


def foreign_link(link: Path, target: Path) -> Path:
    """A symbolic link owned by nobody, as one they could have planted where they may write."""
    need_root()
    link.unlink(missing_ok=True)
    link.symlink_to(target)
    os.lchown(link, NOBODY, NOBODY)
    return link


def foreign_file(path: Path, content: bytes) -> Path:
    """A regular file owned by nobody."""
    need_root()
    path.unlink(missing_ok=True)
    path.write_bytes(content)
    os.chown(path, NOBODY, NOBODY)
    return path

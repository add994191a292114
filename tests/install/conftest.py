"""The clean-root tier: the install commands of README.md and docs/install.md, as written, in fresh Debian 12
roots (mmdebstrap's minbase, cached), each followed by a capture."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from . import cleanroot
from .doccmds import REPO


@pytest.fixture(scope="session")
def checkout() -> list[Path]:
    """The files a fresh clone of this checkout holds (tracked, and new files not ignored)."""
    why = cleanroot.why_not()
    if why:
        pytest.skip(why)
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True, text=True, check=False
    )
    if listed.returncode != 0:
        pytest.skip(f"not a git checkout: {listed.stderr.strip()}")
    return [Path(p) for p in listed.stdout.splitlines() if (REPO / p).is_file() or (REPO / p).is_symlink()]

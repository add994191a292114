"""The native parts build from the checkout's sources without a warning, into a fresh directory."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from native_support import REPO


def test_native_builds_cleanly_from_source(tmp_path):
    if not shutil.which("make") or not shutil.which("gcc"):
        pytest.skip("make/gcc not installed (apt-get install build-essential)")
    res = subprocess.run(
        ["make", "-C", str(REPO / "native"), f"BUILD={tmp_path}", "CFLAGS=-O2 -g -Wall -Wextra -std=gnu11 -Werror"],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert (tmp_path / "pmuprof-helper").is_file() and (tmp_path / "pmuprof-fold").is_file()

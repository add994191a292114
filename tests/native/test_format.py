"""Every native source is in the one style native/.clang-format writes down (issue 25)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

NATIVE = Path(__file__).resolve().parents[2] / "native"


def test_sources_are_formatted():
    tool = shutil.which("clang-format")
    if tool is None:
        pytest.skip("clang-format is not installed (apt-get install clang-format)")
    sources = sorted(
        p for d in ("lib", "arch", "fold", "perfdata", "helper", "offcpu") for p in (NATIVE / d).glob("*.[ch]")
    )
    res = subprocess.run(
        [tool, "--dry-run", "--Werror", *map(str, sources)], capture_output=True, text=True, cwd=NATIVE
    )
    assert res.returncode == 0, "run: clang-format -i native/*/*.[ch]\n" + res.stderr[:3000]

"""ElfFile.server_version: the MariaDB version a server binary carries in .rodata (offline reports)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pmuprof.tools.elf import ElfFile

SRC = r"""
__attribute__((used)) static const char other[] = "1.2.3-MariaDB-log";
__attribute__((used)) static const char server_version[] = "11.4.5-MariaDB";
int main(void) { return 0; }
"""


def _build(tmp_path: Path, src: str) -> Path:
    if not shutil.which("gcc"):
        pytest.skip("gcc is not installed")
    (tmp_path / "v.c").write_text(src)
    subprocess.run(["gcc", "-O0", "-o", str(tmp_path / "v"), str(tmp_path / "v.c")], check=True, capture_output=True)
    return tmp_path / "v"


def test_the_version_string_is_read(tmp_path):
    assert ElfFile(_build(tmp_path, SRC)).server_version() == "11.4.5-MariaDB"


def test_a_longer_string_is_no_version(tmp_path):
    src = SRC.replace('"11.4.5-MariaDB"', '"see 11.4.5-MariaDB-log"')
    assert ElfFile(_build(tmp_path, src)).server_version() is None

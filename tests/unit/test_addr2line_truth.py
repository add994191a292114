"""tests/addr2line_truth.py on a program built here: an always_inline helper inside a noinline function."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from addr2line_truth import inline_chains

SOURCE = r"""
volatile int sink;
static inline __attribute__((always_inline)) void acquire_helper(int n) {
    for (int i = 0; i < n; i++) sink += i * 3;
    __asm__ volatile("nop; nop; nop" ::: "memory");
}
__attribute__((noinline)) void outer_function(int n) {
    sink = 1;
    acquire_helper(n);
    sink = 2;
}
int main(int argc, char **argv) { (void)argv; outer_function(argc + 5); return 0; }
"""


def _build(tmp_path: Path) -> Path:
    if not shutil.which("gcc") or not shutil.which("addr2line"):
        pytest.skip("gcc and binutils' addr2line are needed (apt-get install build-essential)")
    src, exe = tmp_path / "inl.c", tmp_path / "inl"
    src.write_text(SOURCE)
    subprocess.run(["gcc", "-O2", "-g", "-o", str(exe), str(src)], check=True)
    return exe


def _function_range(exe: Path, name: str) -> tuple[int, int]:
    out = subprocess.run(["nm", "-S", str(exe)], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[3] == name:
            start = int(parts[0], 16)
            return start, start + int(parts[1], 16)
    raise AssertionError(f"{name} not in nm -S output")


def test_inlined_helper_chain_is_innermost_first(tmp_path):
    exe = _build(tmp_path)
    start, end = _function_range(exe, "outer_function")
    chains = inline_chains(exe, list(range(start, end)))
    assert set(chains) == set(range(start, end))
    assert all(chain[-1] == "outer_function" for chain in chains.values()), chains
    inlined = [chain for chain in chains.values() if len(chain) > 1]
    assert inlined and all(chain == ["acquire_helper", "outer_function"] for chain in inlined), inlined
    assert chains[start] == ["outer_function"]


def test_repeated_unknown_and_empty_addresses(tmp_path):
    exe = _build(tmp_path)
    start, _ = _function_range(exe, "main")
    chains = inline_chains(exe, [start, 0x10, start])
    assert chains == {start: ["main"], 0x10: ["??"]}
    assert inline_chains(exe, []) == {}

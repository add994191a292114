"""Issue 34 item 4, memory bounded for any input: distinct frame names (JIT code, generated symbols, one or two
of their own per stack) cost a report their bytes and a few arrays each, not a Python string in every index
over them. Shown at 200,000 stacks: the report's own peak with 400,000 distinct names against the same stacks
over 2,000 names (the 1 M stacks x 2 M names case is measured in benchmarks/RESULTS.md)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO
from shared import native_make

STACKS = 200_000
PREFIX = "mysqld;start_thread;handle_one_connection;do_command;dispatch_command"
# What a distinct name may add to the report's peak RSS: its bytes (17 and about 50 here) in the frame table's text,
# 8 of its end, and a few ids and counts in the sorted order, the postings and the flame trie. Measured: 97 B a
# name (two runs, 97.1 and 97.3); with the names held as Python strings instead (the folder's table read into
# a list), 150 B; a tuple of the names with a dict over them took about 650 (1.20 GiB at 2 M names).
BYTES_PER_NAME = 125

# The report in a process of its own, then its peak RSS (the folder is a child: not counted)
PEAK = "import resource, sys\nfrom pmuprof.cli.main import main\ncode = main(sys.argv[1:])\n" + (
    "print(code, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
)


@pytest.fixture(scope="module")
def fold_bin() -> Path:
    """native/build/pmuprof-fold, built or refreshed: the bound is the native folder's (the Python fallback,
    which ``report`` says it uses, holds each stack's strings while it folds)."""
    if not shutil.which("make") or not shutil.which("gcc"):
        pytest.skip("make/gcc not installed: cannot build pmuprof-fold (apt-get install build-essential)")
    with native_make():
        done = subprocess.run(
            ["make", "-C", str(REPO / "native"), "build/pmuprof-fold"], capture_output=True, text=True
        )
    path = REPO / "native" / "build" / "pmuprof-fold"
    if done.returncode != 0 or not path.is_file():
        pytest.fail(f"pmuprof-fold did not build: {done.stderr.strip()[-600:]}")
    return path


def _folded(path: Path, distinct: bool) -> Path:
    """STACKS distinct stacks below the same prefix, ending in two frames: each stack's own (distinct), or
    drawn from 1,000 each (the same rows, 2,000 names)."""
    with open(path, "w", encoding="ascii") as out:
        for i in range(STACKS):
            a, b = (i, i) if distinct else (i % 1000, i // 1000)
            out.write(f"{PREFIX};Item_func_{a:07d}::val_int(Arg_comparator<long, {a % 977}>);tmpl_{b:07d}_leaf 3\n")
    return path


def _peak_kib(folded: Path, out: Path, fold_bin: Path) -> int:
    done = subprocess.run(
        [sys.executable, "-c", PEAK, "report", str(folded), "-o", str(out)],
        env={**os.environ, "PYTHONPATH": str(REPO), "PMUPROF_FOLD": str(fold_bin)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    code, peak = done.stdout.split()[-2:]
    assert code == "0", done.stderr
    return int(peak)


def test_distinct_frame_names_cost_their_bytes_not_a_string_each(tmp_path, fold_bin):
    few = _peak_kib(_folded(tmp_path / "few.folded", distinct=False), tmp_path / "few", fold_bin)
    many = _peak_kib(_folded(tmp_path / "many.folded", distinct=True), tmp_path / "many", fold_bin)
    names = 2 * STACKS
    per_name = (many - few) * 1024 / names
    assert per_name <= BYTES_PER_NAME, (
        f"{per_name:.0f} bytes a distinct name ({few} KiB with 2,000, {many} with {names})"
    )

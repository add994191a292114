"""pmuprof-fold against the Python Folder on real perf recordings (fp and dwarf call graphs)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pmuprof.tools.native import fold as fastfold
from test_fold import assert_same, python_fold

PROG = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
volatile unsigned long sink;
__attribute__((noinline)) unsigned long deep_leaf(unsigned long x) { for (int i = 0; i < 2000; i++) x = x * 31 + i; return x; }
__attribute__((noinline)) unsigned long deep_rec(int d, unsigned long x) { return d ? deep_rec(d - 1, x + d) + 1 : deep_leaf(x); }
static void *worker(void *arg) {  /* a fixed amount of work (~0.4 s of CPU): the same samples on a loaded host */
    long id = (long)arg;
    pthread_setname_np(pthread_self(), id ? "worker 2" : "w;</script>");
    for (long n = 0; n < 150000; n++) sink += deep_rec(5 + (int)id * 7, id);
    return 0;
}
int main(void) {
    pthread_t t[2];
    for (long i = 0; i < 2; i++) pthread_create(&t[i], 0, worker, (void *)i);
    for (int i = 0; i < 2; i++) pthread_join(t[i], 0);
    return 0;
}
"""

MINIMAL = "comm,pid,tid,ip,sym,symoff,dso"


@pytest.fixture(scope="module")
def recordings(tmp_path_factory) -> dict[str, Path]:
    perf = shutil.which("perf")
    if not perf or not shutil.which("gcc"):
        pytest.skip("perf or gcc is not installed (apt-get install linux-perf gcc)")
    tmp = tmp_path_factory.mktemp("foldperf")
    exe = tmp / "deep prog"
    subprocess.run(
        ["gcc", "-O1", "-g", "-fno-omit-frame-pointer", "-o", str(exe), "-x", "c", "-", "-lpthread"],
        input=PROG,
        text=True,
        check=True,
    )
    out = {}
    for mode, cg in (("fp", ["--call-graph", "fp"]), ("dwarf", ["--call-graph", "dwarf,16384"]), ("nocg", [])):
        data = tmp / f"{mode}.data"
        res = subprocess.run(
            [perf, "record", "-q", "-F", "4999", *cg, "-o", str(data), str(exe)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if res.returncode != 0 or not data.is_file():
            pytest.skip(f"perf record does not work here: {res.stderr.strip()[-200:]}")
        out[mode] = data
    return out


def _script(data: Path, fields: str | None) -> list[str]:
    argv = ["perf", "script", "-i", str(data), "--no-inline"]
    return argv + (["-F", fields] if fields else [])


@pytest.mark.parametrize("mode", ["fp", "dwarf", "nocg"])
@pytest.mark.parametrize("fields", [MINIMAL, None])
def test_real_perf_script_text_folds_identically(fold_bin, recordings, tmp_path, mode, fields):
    text = subprocess.run(_script(recordings[mode], fields), capture_output=True, check=True, timeout=120).stdout
    ref = assert_same(fold_bin, text, tmp_path)
    assert ref.kept > 20 and ref.bad_lines == 0
    assert any("deep_rec" in frame for stack in ref.stacks for frame in stack)
    assert mode != "nocg" or all(len(stack) == 2 for stack in ref.stacks)  # root and the sampled frame
    if fields:
        assert ref.pid_known and ref.leaves
    else:
        assert ref.events and not ref.pid_known
    assert_same(fold_bin, text, tmp_path, per_thread=True)
    assert_same(fold_bin, text, tmp_path, comms=["worker 2"])


@pytest.mark.parametrize("mode", ["fp", "dwarf"])
def test_perf_script_piped_into_the_folder(fold_bin, recordings, mode):
    argv = _script(recordings[mode], MINIMAL)
    text = subprocess.run(argv, capture_output=True, check=True, timeout=120).stdout
    assert fastfold.fold_perf_script_process(argv, per_thread=True) == python_fold(text, per_thread=True)


def test_perf_script_failure_is_an_input_error(fold_bin, tmp_path):
    if not shutil.which("perf"):
        pytest.skip("perf is not installed (apt-get install linux-perf)")
    bad = tmp_path / "perf.data"
    bad.write_bytes(b"PERFILE2" + b"\0" * 64)
    from pmuprof.errors import InputError

    with pytest.raises(InputError, match="perf script failed"):
        fastfold.fold_perf_script_process(_script(bad, MINIMAL))

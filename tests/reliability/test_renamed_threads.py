"""Item 9: a server whose threads are renamed (MySQL 8.0.27+: 'connection', 'ib_io_rd-1', ...) is found in
a bare system-wide perf.data through the process's own name, and --per-thread-roots reaches the on-CPU
stacks of a capture."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from helpers import need_perf

from pmuprof.model.labels import thread_root

# A "mysqld" whose main thread only waits; its three workers rename themselves and do the work.
RENAMED_C = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <time.h>
#include <unistd.h>
volatile long sink;
__attribute__((noinline)) void row_search(void) { for (long i = 0; i < 300000; i++) sink += i * 7; }
static void *work(void *name) {
    pthread_setname_np(pthread_self(), (const char *)name);
    struct timespec nap = {0, 30 * 1000 * 1000};
    for (;;) { for (int i = 0; i < 20; i++) row_search(); nanosleep(&nap, 0); }
    return 0;
}
int main(void) {
    static const char *names[] = {"connection", "ib_io_rd-1", "ib_pg_flush_co"};
    pthread_t t;
    for (int i = 0; i < 3; i++) pthread_create(&t, 0, work, (void *)names[i]);
    for (;;) pause();
}
"""
THREADS = ("connection", "ib_io_rd-1", "ib_pg_flush_co")


@pytest.fixture(scope="module")
def renamed(tmp_path_factory):
    """The renamed-thread server (its binary is called mysqld), running; its threads' names checked."""
    need_perf()
    if not shutil.which("gcc"):
        pytest.skip("gcc is not installed (apt-get install build-essential)")
    folder = tmp_path_factory.mktemp("renamed")
    (folder / "renamed.c").write_text(RENAMED_C)
    exe = folder / "mysqld"
    subprocess.run(
        ["gcc", "-O1", "-fno-omit-frame-pointer", "-pthread", "-o", str(exe), str(folder / "renamed.c")], check=True
    )
    proc = subprocess.Popen([str(exe)])
    try:
        deadline = time.monotonic() + 10
        names: list[str] = []
        while time.monotonic() < deadline and sorted(names) != sorted(("mysqld",) + THREADS):
            time.sleep(0.05)
            names = [p.read_text().strip() for p in Path(f"/proc/{proc.pid}/task").glob("*/comm")]
        assert sorted(names) == sorted(("mysqld",) + THREADS), names
        yield proc, folder
    finally:
        proc.kill()
        proc.wait()


def test_system_wide_perf_data_finds_a_server_whose_threads_are_renamed(renamed, pmuprof):
    proc, folder = renamed
    data = folder / "system.data"
    subprocess.run(
        [need_perf(), "record", "-a", "-g", "-F", "99", "-o", str(data), "--", "sleep", "2"],
        check=True,
        capture_output=True,
        timeout=120,
    )
    out = folder / "report"
    res = pmuprof("report", data, "-o", out)
    assert res.code == 0, res.err
    md = (out / "report.md").read_text()
    assert "no samples" not in res.err
    assert "row_search" in md  # the workers' frames are the report
    profile = json.loads(pmuprof("report", data, "--json").out)["profile"]
    # kept, and labelled by the process's own name, not 'connection' (other servers on the host may be kept too)
    assert proc.pid in profile["pids"], profile
    assert {"mysqld", f"mysqld-{proc.pid}"} & set(profile["processes"]), profile


def test_per_thread_roots_reaches_the_on_cpu_stacks(renamed, pmuprof):
    proc, folder = renamed
    out = folder / "capture"
    res = pmuprof("capture", "-p", proc.pid, "-d", "2", "--per-thread-roots", "--no-mysql", "-o", out)
    assert res.code == 0, res.err
    roots = {
        line.split(";")[1]
        for line in (out / "stacks.folded").read_text().splitlines()
        if line and not line.startswith("#") and ";" in line
    }
    tids = {int(t.name) for t in Path(f"/proc/{proc.pid}/task").iterdir()}
    workers = {thread_root(name, tid) for tid in tids for name in THREADS}
    assert roots & workers, roots  # a frame per worker thread under the process root
    assert roots <= workers | {thread_root("mysqld", proc.pid)}, roots
    assert json.loads((out / "run.json").read_text())["record"]["per_thread_roots"] is True  # `report DIR` again

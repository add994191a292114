"""Item 9: the off-CPU tracer's window is perf's window. The tracer attaches before perf starts recording
(perf record -a can take seconds to start on a loaded host) and used to count from its attach, so the
wall-clock view overweighted waits; now it counts from SIGUSR1, sent at perf's ack, and stops with perf."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from helpers import need_perf

from pmuprof.capture.offcpu import tracer
from pmuprof.model.folded import load_folded

# Three threads asleep all the time (woken every 50 ms, a few microseconds on a CPU): the process's
# off-CPU time is three times the window, whatever the host's load.
SLEEPER_C = r"""
#include <pthread.h>
#include <time.h>
static void *nap(void *arg) {
    struct timespec t = {0, 50 * 1000 * 1000};
    (void)arg;
    for (;;) nanosleep(&t, 0);
    return 0;
}
int main(void) {
    pthread_t t;
    pthread_create(&t, 0, nap, 0);
    pthread_create(&t, 0, nap, 0);
    nap(0);
}
"""
THREADS = 3


@pytest.fixture(scope="module")
def sleeper(tmp_path_factory):
    need_perf()
    if not shutil.which("gcc"):
        pytest.skip("gcc is not installed (apt-get install build-essential)")
    why, _ = tracer.unavailable([os.getpid()])
    if why:
        pytest.skip(why)
    folder = tmp_path_factory.mktemp("sleeper")
    (folder / "sleeper.c").write_text(SLEEPER_C)
    exe = folder / "pmuprof-sleeper"
    subprocess.run(["gcc", "-O1", "-pthread", "-o", str(exe), str(folder / "sleeper.c")], check=True)
    proc = subprocess.Popen([str(exe)])
    yield proc, folder
    proc.kill()
    proc.wait()


def test_off_cpu_time_covers_perfs_window_not_the_tracers(sleeper, pmuprof):
    proc, folder = sleeper
    out = folder / "run"
    res = pmuprof("capture", "-p", proc.pid, "-d", "2", "--off-cpu", "--no-mysql", "-o", out)
    assert res.code == 0, res.err
    run = json.loads((out / "run.json").read_text())
    off = run["offcpu"]
    assert off["recorded"], off
    assert "--start-on-usr1" in off["argv"]
    stacks, _ = load_folded(out / "offcpu.folded")
    blocked_s = sum(stacks.values()) / 1e6 / THREADS  # per thread: the window the tracer counted
    window = run["duration_s"]  # perf's: from its ack to the stop
    # asleep all the time: off-CPU time per thread is the window, within the scheduler's slack (each
    # wake-up is a few microseconds on a CPU; a loaded host delays SIGUSR1/SIGINT by milliseconds)
    assert 0.9 * window <= blocked_s <= 1.03 * window + 0.05, (blocked_s, window, off["duration_s"])
    assert abs(off["duration_s"] - window) <= 0.03 * window + 0.05, (off["duration_s"], window)

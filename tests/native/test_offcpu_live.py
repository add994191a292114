"""Off-CPU capture on a real program whose threads wait in known places (BPF; root only)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from native_support import PROGS, compile_prog, native_binary
from pmuprof.capture.offcpu import tracer
from pmuprof.capture.record import RecordOptions, record
from pmuprof.errors import HelperError
from pmuprof.model import rundir
from pmuprof.model.folded import load_folded
from pmuprof.model.offcpu import Threads
from pmuprof.tools.native import offcpu as tool

SECONDS = 4.0


def need_offcpu() -> None:
    if os.geteuid() != 0:
        pytest.skip("off-CPU tracing needs root")
    native_binary("pmuprof-offcpu")
    why, _ = tracer.unavailable([1])
    if why:
        pytest.skip(why)


@pytest.fixture(scope="module")
def waits_run(tmp_path_factory):
    need_offcpu()
    tmp = tmp_path_factory.mktemp("offcpu")
    exe = compile_prog(
        PROGS / "offcpu_waits.c", tmp / "offcpu_waits", "gcc", "-O1", ("-g", "-fno-omit-frame-pointer", "-pthread")
    )
    return record_running([str(exe), "60", str(tmp / "sync.dat")], tmp / "run")


def record_running(argv: list[str], out_dir, seconds: float = SECONDS, off_cpu: bool | None = True):
    """Start argv, record it with off-CPU stacks for ``seconds`` (``off_cpu`` None: capture's default mode),
    stop it: (run dir, run, stacks, headers); skips when BPF is not allowed here."""
    prog = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        out = record(RecordOptions(pids=(prog.pid,), out_dir=out_dir, duration=seconds, mysql=False, off_cpu=off_cpu))
    finally:
        prog.kill()
        prog.wait()
    run = rundir.read_run(out)
    if not run.offcpu.recorded and "not permitted" in run.offcpu.why_not:
        pytest.skip(f"BPF not allowed here: {run.offcpu.why_not}")
    stacks, headers = load_folded(out / rundir.OFFCPU)
    return out, run, stacks, headers


def _us(stacks, *needles: str) -> int:
    """Microseconds of the stacks holding every needle as a frame."""
    return sum(n for s, n in stacks.items() if all(x in s for x in needles))


def test_run_json_says_what_was_recorded(waits_run):
    _, run, stacks, headers = waits_run
    oc = run.offcpu
    assert oc.recorded and oc.returncode == 0 and oc.argv[0].endswith("pmuprof-offcpu"), oc
    assert headers["unit"] == "us" and oc.total_us == sum(stacks.values())
    # the tracer's window opens when it handles the SIGUSR1 sent as perf's window opens, and ends when it handles
    # its stop: perf's window give or take those signals' latency (3.995 s against perf's 4.002 s beside two
    # busy loops; asserted >= the 4 s asked, it failed there)
    assert run.duration_s - 0.25 <= oc.duration_s <= run.duration_s + 0.25, (oc.duration_s, run.duration_s)
    assert oc.switches > 0 and oc.lost["entries_full"] == 0
    assert not [w for w in run.warnings if w.startswith("off-CPU")], run.warnings


def test_mutex_waiters_block_in_futex_under_their_function(waits_run):
    _, run, stacks, _ = waits_run
    window_us = run.offcpu.duration_s * 1e6
    # asleep (S) and, after each wake-up, waiting for a CPU (W: the host is shared)
    lock = _us(stacks, "waiter", "__x64_sys_futex_[k]", "off-cpu:S") + _us(
        stacks, "waiter", "__x64_sys_futex_[k]", "off-cpu:W"
    )
    # two waiter threads, each blocked on the mutex nearly all the time (the holder takes it back at once)
    assert 0.6 * 2 * window_us < lock <= 1.05 * 2 * window_us, (lock, window_us)
    assert any(
        "__lll_lock_wait" in s or "pthread_mutex_lock" in s or "waiter_takes_lock" in s for s in stacks if "waiter" in s
    ), "a libc lock frame or the program's function under waiter"


def test_holder_sleeps_and_syncer_waits_for_the_disk(waits_run):
    _, run, stacks, _ = waits_run
    window_us = run.offcpu.duration_s * 1e6
    held = _us(stacks, "holder_sleeps_with_lock", "__x64_sys_clock_nanosleep_[k]", "off-cpu:S")
    held += _us(stacks, "holder_sleeps_with_lock", "__x64_sys_clock_nanosleep_[k]", "off-cpu:W")
    assert 0.6 * window_us < held <= 1.05 * window_us, (held, window_us)
    fsync = _us(stacks, "syncer", "__x64_sys_fsync_[k]", "off-cpu:D") + _us(
        stacks, "syncer", "__x64_sys_fsync_[k]", "off-cpu:W"
    )
    syncer = _us(stacks, "syncer")
    assert fsync > 0.5 * syncer and fsync > 0.1 * window_us, (fsync, syncer, window_us)


def test_threads_json_groups_the_waiters(waits_run):
    out, _, _, _ = waits_run
    snaps = rundir.read_typed(out / rundir.THREADS, Threads)
    assert [s.when for s in snaps.snapshots] == ["start", "end"]
    end = snaps.snapshots[1]
    assert end.threads == 5
    assert sum(g.comms.get("waiter", 0) for g in end.groups) == 2, end.groups

    # A snapshot is one instant: on a loaded host a waiter just handed the lock may be runnable then.
    # Both waiters block ~all the time, so of the four sightings (start, end) most sleep in the futex;
    # at the end each is grouped with the stack BPF saw it block on (at the start BPF has seen nothing).
    def in_futex(snap):
        return [g for g in snap.groups if g.comms.get("waiter") and g.state == "S" and "futex" in g.wchan]

    assert sum(g.count for snap in snaps.snapshots for g in in_futex(snap)) >= 1, snaps.snapshots
    assert all(g.user_source == "bpf" and "waiter" in g.user for g in in_futex(end)), end.groups


@pytest.mark.parametrize("mode", ["eager", "lazy"])
def test_threads_born_in_the_window_are_charged_from_their_birth(tmp_path, mode):
    """A thread created during the capture has waited at most since it was created: hundreds of short-lived
    threads (at most four alive at once) must not each count the window from its start."""
    need_offcpu()
    if mode == "lazy" and not tracer.cheap_here():
        pytest.skip("this kernel has no sched_exit_tp: the tracer runs eager only")
    exe = compile_prog(
        PROGS / "thread_churn.c", tmp_path / "thread_churn", "gcc", "-O1", ("-g", "-fno-omit-frame-pointer", "-pthread")
    )
    _, run, stacks, _ = record_running([str(exe), "60"], tmp_path / "run", off_cpu=True if mode == "eager" else None)
    assert run.offcpu.recorded and run.offcpu.mode == mode, run.offcpu
    window_us = run.offcpu.duration_s * 1e6
    blocked = sum(stacks.values())
    # main (joining), two sleepers, one short-lived thread: never more than four off the CPU at once
    assert 0.5 * 2 * window_us < blocked <= 4.2 * window_us, (blocked / window_us, run.offcpu)


def _trace(exe: str, pid: int, out: Path, seconds: float) -> tool.TracerOutput:
    done = subprocess.run(
        [exe, "--pid", str(pid), "--duration", str(seconds), "--out", str(out)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return tool.load(out)


def test_another_tracer_coming_and_going_invents_no_wait(tmp_path):
    """With a second tracer started and stopped in a loop beside it, the kernel does not run this tracer's
    sched_switch program for every switch-out of pingpong's threads (a busy process as the other tracer's target
    made it skip up to 45 % of them). A missed
    switch-out must leave that wait out, never count a thread off the CPU for longer than the window: when a
    switch-in without a start record meant "off since before the capture", one thread of pingpong's busy
    pairs counted 280 to 40,000 windows."""
    need_offcpu()
    exe = compile_prog(
        PROGS / "pingpong.c", tmp_path / "pingpong", "gcc", "-O1", ("-g", "-fno-omit-frame-pointer", "-pthread")
    )
    tracer_exe = str(native_binary("pmuprof-offcpu"))
    churn_script = (
        "import subprocess, sys\n"
        "while True:\n"
        "    subprocess.run([sys.argv[1], '--pid', sys.argv[2], '--duration', '1', '--out', sys.argv[3]],"
        " stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    )
    prog = subprocess.Popen([str(exe), "120", "4"])
    other = subprocess.Popen([str(exe), "120", "1"])  # the other tracer's target: busy too
    churn = subprocess.Popen(
        [sys.executable, "-c", churn_script, tracer_exe, str(other.pid), str(tmp_path / "churn.out")],
        start_new_session=True,
    )
    missed = 0
    try:
        for attempt in range(4):  # until the kernel skipped some events: the case under test
            out = _trace(tracer_exe, prog.pid, tmp_path / f"out{attempt}", 3.0)
            window = out.end_ns - out.t0_ns
            per_thread: dict[int, int] = {}
            before: dict[int, int] = {}
            for w in out.waits:
                per_thread[w.tid] = per_thread.get(w.tid, 0) + w.ns
                if w.state == "B":
                    before[w.tid] = before.get(w.tid, 0) + w.waits
            worst = max(per_thread.values()) / window
            assert worst <= 1.001, (attempt, worst, out.stats)
            assert max(before.values(), default=0) <= 1, (attempt, before)
            missed = out.stats.get("out_missed", 0) + out.stats.get("in_missed", 0)
            if missed:
                break
    finally:
        os.killpg(churn.pid, 9)
        for p in (churn, prog, other):
            p.kill()
            p.wait()
    if not missed:
        pytest.skip("the kernel delivered every scheduler event to the tracer in 4 windows: nothing was missed")


def test_without_the_tracer_the_capture_goes_on(tmp_path, monkeypatch):
    """Not built: capture's default (off-CPU where it runs) records on-CPU alone; an explicit --off-cpu stops
    before recording, in one line (issue 24: never silently on-CPU only when off-CPU was asked for)."""
    need_offcpu()
    monkeypatch.setenv("PMUPROF_OFFCPU", "")  # as if pmuprof-offcpu was not built
    prog = subprocess.Popen(["sleep", "30"])
    try:
        with pytest.raises(HelperError, match="not built"):
            record(RecordOptions(pids=(prog.pid,), out_dir=tmp_path / "asked", duration=1.0, mysql=False, off_cpu=True))
        assert not (tmp_path / "asked" / rundir.PERF_DATA).exists()
        out = record(RecordOptions(pids=(prog.pid,), out_dir=tmp_path / "run", duration=1.0, mysql=False, off_cpu=None))
    finally:
        prog.kill()
        prog.wait()
    run = rundir.read_run(out)
    assert run.offcpu is None or not run.offcpu.recorded
    assert (out / rundir.PERF_DATA).is_file() and not (out / rundir.OFFCPU).exists()
    assert Path(out / rundir.RUN_JSON).is_file()


def test_killed_tracer_leaves_nothing_attached(tmp_path):
    """Its programs (sched_switch, the switch-in, the wake-up hook) are the tracer's fds: SIGKILL leaves none
    loaded. They are told from other tracers on the host by the prog ids in the tracer's own /proc fdinfo."""
    need_offcpu()
    if not shutil.which("bpftool"):
        pytest.skip("bpftool is not installed (apt-get install bpftool)")

    def names(ids: set[int]) -> set[str]:
        out = set()
        for prog in ids:
            shown = subprocess.run(["bpftool", "prog", "show", "id", str(prog)], capture_output=True, text=True)
            out |= {w for w in shown.stdout.split() if w.startswith("on_")} if shown.returncode == 0 else set()
        return out

    log = tmp_path / "log"
    proc = subprocess.Popen(
        [
            str(native_binary("pmuprof-offcpu")),
            "--pid",
            str(os.getpid()),
            "--duration",
            "60",
            "--out",
            str(tmp_path / "out"),
        ],
        stderr=open(log, "wb"),
    )
    try:
        deadline = time.monotonic() + 30
        while "attached" not in log.read_text() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        ids = set()
        for info in Path(f"/proc/{proc.pid}/fdinfo").iterdir():
            ids |= {int(x.split()[1]) for x in info.read_text().splitlines() if x.startswith("prog_id:")}
        assert {"on_switch", "on_wakeup"} <= names(ids), names(ids)
    finally:
        proc.kill()  # SIGKILL: no chance to clean up; the kernel detaches with the last fd
        proc.wait()
    deadline = time.monotonic() + 30  # the kernel frees a program after an RCU grace period: wait for it
    while names(ids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not names(ids) and not (tmp_path / "out").exists()

"""Reliability suite fixtures: the CLI in-process, a busy process, a small tmpfs, a misbehaving perf."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers import REPO, build_busy, need_perf, spawn_named

from pmuprof import signals
from pmuprof.model import rundir
from pmuprof.cli.main import main


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str


def one_line(res: Ran, code: int, *needles: str) -> str:
    """The run failed with ``code`` and said so in exactly one line (no traceback), holding ``needles``."""
    assert res.code == code, res.err
    assert "Traceback" not in res.err, res.err
    errors = [line for line in res.err.splitlines() if line.startswith("pmuprof: error:")]
    assert len(errors) == 1, res.err
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


@pytest.fixture
def pmuprof(monkeypatch, capsys):
    """Run the CLI in this process (fast; main() puts pytest's signal handlers back when it returns)."""

    def run(*args: str, env: dict[str, str] | None = None) -> Ran:
        for key, value in (env or {}).items():
            monkeypatch.setenv(key, value)
        code = main([str(a) for a in args])
        got = capsys.readouterr()
        return Ran(code, got.out, got.err)

    return run


def spawn_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    """The CLI as a real process (for real signals), stderr captured."""
    full = {**os.environ, **(env or {}), "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-m", "pmuprof", *map(str, args)],
        env=full,
        text=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def finish(proc: subprocess.Popen, timeout: float = 900) -> Ran:
    """Its exit status and output (``timeout``: a hang detector, never the pass condition)."""
    out, err = proc.communicate(timeout=timeout)
    return Ran(proc.returncode, out, err)


def wait_for(path: Path, timeout: float = 600, proc: subprocess.Popen | None = None) -> None:
    """Until ``path`` exists and is not empty (perf.data appears once perf records)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.stat().st_size > 0:
            return
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"pmuprof exited {proc.returncode} before {path} appeared")
        time.sleep(0.1)
    raise AssertionError(f"{path} did not appear within {timeout} s")


def wait_window(out: Path, proc: subprocess.Popen, timeout: float = 600) -> None:
    """Until the capture's window is open: perf.data exists and the off-CPU tracer beside perf (root, BPF) has
    said 'attached', which it does when the window opens; without a tracer, a second after perf.data (perf
    creates it before its window: a loaded host can take seconds between the two)."""
    wait_for(out / "perf.data", timeout, proc)
    log, deadline = out / rundir.OFFCPU_LOG, time.monotonic() + timeout
    while log.exists():
        text = log.read_text(errors="replace")
        if "attached" in text:
            return
        if any(line and "ready" not in line for line in text.splitlines()):  # the tracer failed: no signal
            break
        assert proc.poll() is None, f"pmuprof exited {proc.returncode} before its window opened"
        assert time.monotonic() < deadline, f"{out}: the window did not open in {timeout:g} s"
        time.sleep(0.05)
    time.sleep(1)


DUTY_C = r"""
#include <time.h>
volatile long sink;
__attribute__((noinline)) void hot_leaf(void) { for (long i = 0; i < 200000; i++) sink += i * 7; }
__attribute__((noinline)) void warm_caller(void) { for (int i = 0; i < 80; i++) hot_leaf(); }
int main(void) {  /* about a fifth of one CPU: sampled often, leaves the rest to the captures */
    struct timespec nap = {0, 30 * 1000 * 1000};
    for (;;) { warm_caller(); nanosleep(&nap, 0); }
}
"""


@pytest.fixture(scope="session")
def duty_exe(tmp_path_factory) -> Path:
    """The busy program, built once per session (DUTY_C: hot_leaf <- warm_caller, about a fifth of a CPU)."""
    need_perf()
    folder = tmp_path_factory.mktemp("busy")
    exe = build_busy(folder)  # skips without gcc
    (folder / "duty.c").write_text(DUTY_C)
    subprocess.run(["gcc", "-O1", "-fno-omit-frame-pointer", "-o", str(exe), str(folder / "duty.c")], check=True)
    return exe


@contextlib.contextmanager
def running_busy(exe: Path) -> Iterator[subprocess.Popen]:
    """The busy program (``duty_exe``) running for as long as the block: a module-scoped capture starts its own."""
    proc = spawn_named([str(exe)])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
def busy(duty_exe):
    """A process with known frames (hot_leaf <- warm_caller) using about 20 % of a CPU, for one test: it burns
    that fifth of a CPU for as long as it lives, so it lives while its test does (session-long, one in each
    worker, they cost the fast tier about 300 CPU-seconds doing nothing; module-long, about 9 of
    test_rundir_readers' 22)."""
    with running_busy(duty_exe) as proc:
        yield proc


@pytest.fixture
def tmpfs(tmp_path):
    """Mount a tmpfs of a given size (MiB) under tmp_path; unmounted afterwards."""
    mounted: list[Path] = []

    def make(size_mib: int, readonly: bool = False) -> Path:
        where = tmp_path / f"fs{len(mounted)}"
        where.mkdir()
        opts = f"size={size_mib}m" + (",ro" if readonly else "")
        res = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", opts, "pmuprof-test", str(where)], capture_output=True, text=True
        )
        if res.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {res.stderr.strip()}")
        mounted.append(where)
        return where

    yield make
    for where in mounted:
        subprocess.run(["umount", "-l", str(where)], check=False)


FAKE_PERF = """#!/bin/sh
# a misbehaving perf: FAKE_HANG lists subcommands that hang, FAKE_GARBLE ones that print non-UTF-8
case " $FAKE_HANG " in *" $1 "*) exec sleep 1000;; esac
case " $FAKE_GARBLE " in *" $1 "*) printf 'perf version \\377\\376 6.1\\n\\377\\n'; exit 0;; esac
exec {perf} "$@"
"""


@pytest.fixture
def fake_perf(tmp_path):
    """A perf wrapper (PMUPROF_PERF) that hangs or garbles where told, else runs the real perf."""
    perf = need_perf()
    path = tmp_path / "perf"
    path.write_text(FAKE_PERF.format(perf=perf))
    path.chmod(0o755)
    return path


SIGNAL_CASES = {"SIGTERM": 143, "SIGHUP": 129, "SIGINT": 130}
HANG_STEPS = ("version", "record", "evlist", "script")


def _children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        out += [int(c) for c in (task / "children").read_text().split()]
    return out


def perf_record_of(pid: int) -> int:
    """The perf record process a capture started (found from its parent, never by name)."""
    for child in _children(pid):
        if b"record" in Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0"):
            return child
    raise AssertionError("no perf record child")


def _start_live(busy: subprocess.Popen, base: Path) -> dict[str, subprocess.Popen]:
    slow_fold = base / "fold"
    slow_fold.write_text("#!/bin/sh\nexec sleep 60\n")  # folding that only a signal ends
    fake = base / "perf"
    fake.write_text(FAKE_PERF.format(perf=need_perf()))
    for tool in (slow_fold, fake):
        tool.chmod(0o755)
    procs = {}
    for case in (*SIGNAL_CASES, "perf-killed", "again", "nightly/killed"):
        extra = ("--mysql-socket", base / "no-such.sock") if case == "SIGTERM" else ("--no-mysql",)
        # folding that hangs: pmuprof-fold after perf script (the native perf.data reader left out)
        env = {"PMUPROF_FOLD": str(slow_fold), "PMUPROF_PERFDATA": ""} if case == "again" else None
        procs[case] = spawn_cli("capture", "-p", busy.pid, "-d", "60", "-o", base / case, *extra, env=env)
    for step in HANG_STEPS:
        procs[f"hang-{step}"] = spawn_cli(
            "capture",
            "-p",
            busy.pid,
            "-d",
            "1",
            "-o",
            base / f"hang-{step}",
            "--no-mysql",
            env={"PMUPROF_PERF": str(fake), "FAKE_HANG": step, "PMUPROF_STALL_S": "2", "PMUPROF_PERFDATA": ""},
        )
    return procs


def _stop_live(procs: dict[str, subprocess.Popen], base: Path) -> None:
    for case in (*SIGNAL_CASES, "perf-killed", "again", "nightly/killed"):
        wait_window(base / case, procs[case])
    time.sleep(1.5)  # samples in every window
    first = time.monotonic()
    for case in (*SIGNAL_CASES, "perf-killed", "again", "nightly/killed"):
        if case == "perf-killed":
            os.kill(perf_record_of(procs[case].pid), signal.SIGKILL)
        elif case == "nightly/killed":
            procs[case].kill()
        else:
            procs[case].send_signal(getattr(signal, case, signal.SIGTERM))
    wait_for(base / "again" / "counters.json")  # perf has stopped; folding is next
    # a second request, not part of the first one's burst (signals.BURST_S)
    time.sleep(max(0.5, first + 2 * signals.BURST_S - time.monotonic()))
    procs["again"].send_signal(signal.SIGTERM)


@pytest.fixture(scope="session")
def live(duty_exe, tmp_path_factory):
    """Every scenario that needs real perf on the busy process, run at once (their waits overlap):
    captures cut short by SIGTERM/SIGHUP/SIGINT, by SIGKILL of perf or of pmuprof, by a second signal
    during folding, and captures whose perf hangs at one step. Returns ({case: (Ran, end time, run
    directory)}, start time)."""
    base = tmp_path_factory.mktemp("live")
    t0 = time.monotonic()
    with running_busy(duty_exe) as busy:  # its own busy process, for as long as the captures take
        procs = _start_live(busy, base)
        with ThreadPoolExecutor(len(procs)) as pool:  # each case's own end time
            ends = {case: pool.submit(_finish_timed, proc) for case, proc in procs.items()}
            try:
                _stop_live(procs, base)
            except BaseException:
                for proc in procs.values():
                    proc.kill()
                raise
            return {case: (*end.result(), base / case) for case, end in ends.items()}, t0


def _finish_timed(proc: subprocess.Popen) -> tuple[Ran, float]:
    res = finish(proc, timeout=900)  # a hang detector: eleven captures report at once, on a loaded host
    return res, time.monotonic()

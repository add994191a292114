"""What tests only read, made once per run: a folder built under a lock, shared by every test, pytest-xdist
worker and tier process of the run (tests/run_tiers.py sets PMUPROF_TEST_SHARED); and the lock that keeps
two processes from running make in native/ at once."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import time
from collections.abc import Callable, Iterator
from typing import IO
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
NATIVE_LOCK = REPO / "native" / "build" / ".make.lock"


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` (created), held while the block runs; other processes wait for it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


HOST_TIER_LOCK = "host-tier.lock"  # in PMUPROF_TEST_SHARED: tests/run_tiers.py holds it while the host tier runs


@contextlib.contextmanager
def after_host_tier() -> Iterator[None]:
    """Held around what loads BPF programs in a tier that runs beside the host tier (the build tier's capture
    from the installed copy): waits until the host tier, whose system-wide recordings are compared with perf
    script byte for byte, has ended. Outside tests/run_tiers.py it waits for nothing."""
    given = os.environ.get("PMUPROF_TEST_SHARED")
    if not given:
        yield
        return
    with open(Path(given) / HOST_TIER_LOCK, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


SATURATING_LOCK = "saturating.lock"  # in PMUPROF_TEST_SHARED: held while a flat-out load runs
SATURATING_WAIT_S = 1800.0  # a hang detector: no unit's flat-out loads take this long together


def timeline(event: str, what: str) -> None:
    """PMUPROF_TEST_TIMELINE=FILE: one line per event (monotonic time, worker, event, test id, the host's busy
    CPU-seconds so far): each test's start and end (tests/conftest.py), and each hold and release of the flat-out
    lock by the test holding it, to see which units a tier ran when, where its workers sat idle, which tests the
    CPUs were busy under and how long flat-out loads held them (tests/timeline.py, docs/development.md)."""
    path = os.environ.get("PMUPROF_TEST_TIMELINE")
    if not path:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(path, "a", encoding="utf-8") as out:
        out.write(f"{time.monotonic():.3f}\t{worker}\t{event}\t{what}\t{_busy_cpu_s():.2f}\n")


def _busy_cpu_s() -> float:
    """CPU-seconds the host has spent busy since boot (/proc/stat: all but idle and iowait)."""
    with open("/proc/stat", encoding="ascii") as stat:
        ticks = [int(v) for v in stat.readline().split()[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def _current_test() -> str:
    return os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0]


class _Hold:
    """This process's hold on SATURATING_LOCK: how many of its loads hold it, and the open lock file while they
    do (None outside tests/run_tiers.py, where nothing is locked)."""

    loads = 0
    file: IO[str] | None = None


_hold = _Hold()


def hold_cpus() -> None:
    """Before a load that takes every CPU it is given (sysbench flat out): waits until no other process of the
    run runs one. The live tier runs units side by side (PMUPROF_LIVE_WORKERS); two 16-thread loads at once starved
    each other's server (runnable 38 on 2 CPUs; a spin test's 4 s recording then held no spin), while a unit
    with a paced load, a CLI or a report needs little. Nested holds in one process count (a test that loads two
    servers at once). Outside tests/run_tiers.py it waits for nothing. release_cpus() ends each hold."""
    given = os.environ.get("PMUPROF_TEST_SHARED")
    if _hold.loads == 0 and given:
        fh = open(Path(given) / SATURATING_LOCK, "a")
        timeline("want", _current_test())
        deadline = time.monotonic() + SATURATING_WAIT_S
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    fh.close()
                    raise AssertionError(
                        f"another test's flat-out load held the CPUs for {SATURATING_WAIT_S:g} s"
                    ) from None
                time.sleep(0.05)
        _hold.file = fh
        timeline("hold", _current_test())
    _hold.loads += 1


def release_cpus() -> None:
    """Ends one hold_cpus(); the last one lets another process's load start."""
    assert _hold.loads > 0, "release_cpus() without hold_cpus()"
    _hold.loads -= 1
    if _hold.loads == 0 and _hold.file is not None:
        fcntl.flock(_hold.file, fcntl.LOCK_UN)
        _hold.file.close()
        _hold.file = None
        timeline("release", _current_test())


@contextlib.contextmanager
def cpus_held() -> Iterator[None]:
    """hold_cpus() around a block that runs a flat-out load itself (perf record -- sysbench ...)."""
    hold_cpus()
    try:
        yield
    finally:
        release_cpus()


def native_make() -> contextlib.AbstractContextManager[None]:
    """Held around every make in native/ (and every in-tree wheel build, whose setup.py runs make there)."""
    return locked(NATIVE_LOCK)


def shared_dir(factory: pytest.TempPathFactory) -> Path:
    """This run's folder for shared builds: the runner's, else the one the xdist workers share, else basetemp."""
    given = os.environ.get("PMUPROF_TEST_SHARED")
    if given:
        return Path(given)
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # workers: <basetemp>/popen-gwN


def once(factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]) -> Path:
    """The folder NAME in shared_dir, filled by ``make(folder)`` the first time any test of the run asks.

    A skip or failure of ``make`` is kept and given to every later asker, so a broken build fails (or a
    missing tool skips) each test that needs it without building it again."""
    base = shared_dir(factory)
    folder, skipped, failed = base / name, base / f"{name}.skipped", base / f"{name}.failed"
    with locked(base / f"{name}.lock"):
        if (folder / ".made").exists():
            return folder
        if skipped.exists():
            pytest.skip(skipped.read_text())
        if failed.exists():
            pytest.fail(f"{name}, made once for the run, failed: {failed.read_text()}", pytrace=False)
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        try:
            make(folder)
        except pytest.skip.Exception as err:
            skipped.write_text(str(err.msg))
            raise
        except BaseException as err:
            failed.write_text(f"{type(err).__name__}: {err}"[-2000:])
            raise
        (folder / ".made").touch()
        return folder


def _pip_wheel(folder: Path, native: bool) -> None:
    """`pip wheel` of this checkout (build isolation fetches setuptools >= 77); skip when pip cannot. The
    build runs in the checkout (setup.py makes native/, writes build/): one at a time."""
    import subprocess
    import sys

    env = {**os.environ, "PMUPROF_BUILD_NATIVE": "1" if native else "0"}
    with native_make():
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(folder), str(REPO)],
            capture_output=True,
            text=True,
            timeout=900,
            env=env,
        )
    if proc.returncode != 0:
        pytest.skip(f"pip could not build the wheel here: {proc.stderr.strip().splitlines()[-1][:200]}")


def wheel(factory: pytest.TempPathFactory, native: bool) -> Path:
    """This checkout's wheel, built once per run: with the native helpers (PMUPROF_BUILD_NATIVE=1) or without."""
    name = "wheel-native" if native else "wheel-pure"
    return next(once(factory, name, lambda folder: _pip_wheel(folder, native)).glob("pmuprof-*.whl"))

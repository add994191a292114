"""Run the whole suite as its tiers (tests/tiers.py), each its own pytest process, and fail when any fails.

``python3 tests/run_tiers.py`` is what ``sh bootstrap.sh test`` (and so CI) runs. A tier starts once the tiers it
waits for (AFTER) have ended: first the host tier (system-wide recordings that another tier's BPF programs or
namespaces would change) and beside it the build tier (compilers, wheels, venvs: no BPF but in one test, which
waits for the host tier itself); then the fast tier in parallel (pytest-xdist, one worker per CPU), the live
tier two units of tests at a time (a module, or the modules that share 10.2.11's server or the reliability
tier's capture set: tests/tiers.py's unit_of), the paced incident scenarios first, then those sharing a server, its timing and share
assertions made to hold on a busy host, side by side; the clean-root tier, when asked, after the live tier. Each tier's output is printed when it ends, with its
wall-clock and CPU time; ``--tier NAME`` (repeatable) runs only those tiers, the opt-in clean-root tier among
them (tests/tiers.py's OPT_IN_TIERS: left out otherwise); arguments after ``--`` go to every pytest.
"""

from __future__ import annotations

import argparse
import fcntl
import importlib.util
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from shared import HOST_TIER_LOCK  # noqa: E402
from tiers import OPT_IN_TIERS, TIER_NAMES, TESTS, paths_of  # noqa: E402

# Each tier starts once the tiers it waits for have ended (or are not run): the host tier's recordings must not
# hold another tier's BPF programs, so the tiers that capture wait for it; the build tier compiles beside it
# (its one capture waits for the host tier in the test: shared.after_host_tier). The clean-root tier waits for the
# live tier too: its roots are chroots in a mount namespace, whose /proc is the host's, so a `pmuprof doctor` in
# a root checks every mysqld on the host, and the live tier's servers start and stop under it.
AFTER = {"host": (), "build": (), "fast": ("host",), "live": ("host",), "cleanroot": ("host", "live")}
REPO = TESTS.parent
GRACE_S = 20.0  # after SIGTERM, before SIGKILL, when the runner itself is stopped
# The tiers that yield the CPUs to the others: the build tier to the host tier beside it (the live tier waits
# for the host tier), both to the live tier (which ends last). Their session's scheduling group (autogroup,
# docs/development.md) at this nice; the fast tier at 5 ended last beside two busy loops (913 s against the
# live tier's 790), so it yields less.
YIELDING = {"fast": 3, "build": 5}


@dataclass
class Tier:
    name: str
    argv: list[str]
    log: Path
    proc: subprocess.Popen | None = None
    started: float = 0.0
    wall: float = 0.0
    cpu: float = 0.0
    code: int | None = None
    note: str = ""
    done: bool = field(default=False)


def _count(variable: str, otherwise: int) -> int:
    """The positive whole number in the environment variable, else ``otherwise``."""
    wanted = os.environ.get(variable, "")
    return int(wanted) if wanted.isdigit() and int(wanted) > 0 else otherwise


def workers() -> int:
    """Parallel workers for the fast tier: PMUPROF_TEST_WORKERS, else the CPUs this process may run on."""
    return _count("PMUPROF_TEST_WORKERS", len(os.sched_getaffinity(0)))


def live_workers() -> int:
    """Units of the live tier at once: PMUPROF_LIVE_WORKERS, else two (at most one per CPU). Three on 2 vCPUs
    ended the live tier sooner (606 s against 691 s) but three runs in four then had a test fail on a starved
    target (docs/development.md): two until every such test holds beside a third unit."""
    return _count("PMUPROF_LIVE_WORKERS", min(2, workers()))


def tier_argv(name: str, work: Path, extra: list[str]) -> list[str] | None:
    """The tier's pytest command line, or None when no folder of it exists here."""
    paths = paths_of(name)
    if not paths:
        return None
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", name, "--durations=25"]
    argv += [f"--basetemp={work / name}"]
    if importlib.util.find_spec("xdist") is not None and workers() > 1:
        if name == "fast":  # loadscope: a module's tests stay on one worker (its captures are made once)
            argv += ["-n", str(workers()), "--dist", "loadscope"]
        elif name == "live":  # units side by side (tests/conftest.py's scheduler, tests/tiers.py's unit_of)
            argv += ["-n", str(live_workers()), "--dist", "loadgroup"]
    return argv + [str(p.relative_to(REPO)) for p in paths] + extra


def start(tier: Tier, env: dict[str, str]) -> None:
    print(f"== {tier.name}: started: {' '.join(tier.argv[1:])}", flush=True)
    with open(tier.log, "wb") as log:
        tier.proc = subprocess.Popen(
            tier.argv,
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group: stopping the runner stops every process a tier started
        )
    tier.started = time.monotonic()
    if tier.name in YIELDING and not yield_cpus(tier.proc.pid, YIELDING[tier.name]):
        print(f"== {tier.name}: its scheduling group could not be set to nice {YIELDING[tier.name]}", flush=True)


def yield_cpus(pid: int, nice: int) -> bool:
    """The scheduling group of ``pid``'s session at ``nice`` (its processes' own nice is untouched); whether it
    is. A kernel without autogroups (no /proc/PID/autogroup) schedules by process: nothing to set, and True. A
    user who is not root may set one group a tenth of a second (EAGAIN): once more after that. Under a cpu
    cgroup other than the root one (a container) the kernel does not schedule by autogroup: set, to no effect."""
    where = Path(f"/proc/{pid}/autogroup")
    if not where.exists():
        return True
    for wait in (0.0, 0.11):
        time.sleep(wait)
        try:
            where.write_text(str(nice))
            return where.read_text().split()[-1] == str(nice)
        except OSError:
            continue
    return False


def finish(tier: Tier, status: int, usage: resource.struct_rusage) -> None:
    tier.wall = time.monotonic() - tier.started
    tier.cpu = usage.ru_utime + usage.ru_stime  # the tier's pytest and every child it waited for
    tier.code = os.waitstatus_to_exitcode(status)
    if tier.code == 5:  # pytest: no test collected (every test of the tier deselected here)
        tier.code, tier.note = 0, "no test here"
    tier.done = True
    text = tier.log.read_text(errors="replace")
    print(f"\n== {tier.name}: output\n{text.rstrip()}", flush=True)
    print(f"== {tier.name}: {verdict(tier)}", flush=True)


def verdict(tier: Tier) -> str:
    if tier.code is None:
        return "not run" + (f" ({tier.note})" if tier.note else "")
    said = "passed" if tier.code == 0 else f"FAILED (pytest exit {tier.code})"
    note = f", {tier.note}" if tier.note else ""
    return f"{said} in {tier.wall:.0f} s wall, {tier.cpu:.0f} s CPU{note}"


def stop_all(tiers: list[Tier]) -> None:
    """SIGTERM to every running tier's process group, SIGKILL after GRACE_S."""
    running = [t for t in tiers if t.proc is not None and not t.done]
    for tier in running:
        try:
            os.killpg(tier.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + GRACE_S
    for tier in running:
        try:
            tier.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            try:
                os.killpg(tier.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            tier.proc.wait()
        tier.done = True


def plan(names: list[str], work: Path, extra: list[str]) -> list[Tier]:
    """Every tier asked for, in AFTER's order; those without tests here are said and marked done."""
    tiers: list[Tier] = []
    for name in (n for n in AFTER if n in names):
        argv = tier_argv(name, work, extra)
        tier = Tier(name, argv or [], work / f"{name}.log")
        tiers.append(tier)
        if argv is None:  # not run, not failed: e.g. the clean-root tier on a branch without it
            tier.note, tier.done = "no folder of this tier here", True
            print(f"== {name}: {tier.note}", flush=True)
    return tiers


def run_all(tiers: list[Tier], env: dict[str, str], host_lock) -> None:
    """Start each tier once every tier it waits for is done; return when all are. ``host_lock``, held
    exclusively until the host tier ends, is what shared.after_host_tier waits for."""
    by_name = {t.name: t for t in tiers}
    running: dict[int, Tier] = {}
    while True:
        for tier in tiers:
            ready = all(by_name[d].done for d in AFTER[tier.name] if d in by_name)
            if tier.proc is None and not tier.done and ready:
                start(tier, env)
                running[tier.proc.pid] = tier
        if not running:
            return
        pid, status, usage = os.wait4(-1, 0)
        if pid in running:
            tier = running.pop(pid)
            finish(tier, status, usage)
            if tier.name == "host":
                fcntl.flock(host_lock, fcntl.LOCK_UN)


def run(names: list[str], extra: list[str]) -> int:
    work = Path(tempfile.mkdtemp(prefix="pmuprof-tests-"))
    (work / "shared").mkdir()
    # builds and captures more than one tier or xdist worker reads are made once, under locks, in here
    env = {**os.environ, "PMUPROF_TEST_SHARED": str(work / "shared")}
    # Python's bytecode compiled once for the run, outside the checkout: the suite starts hundreds of
    # interpreters (pmuprof's commands, xdist workers), and under PYTHONDONTWRITEBYTECODE (set on the shared
    # development host) a fresh clone has no bytecode: each compiled every module it imported (~0.9 s of CPU)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    tiers = plan(names, work, extra)
    host_lock = open(work / "shared" / HOST_TIER_LOCK, "w")  # held until the host tier ends
    fcntl.flock(host_lock, fcntl.LOCK_EX)
    if not any(t.name == "host" and not t.done for t in tiers):
        fcntl.flock(host_lock, fcntl.LOCK_UN)
    t0 = time.monotonic()

    def on_signal(signum, _frame):
        print(f"\n== stopped by signal {signum}: stopping the tiers (logs in {work})", flush=True)
        stop_all(tiers)
        for tier in tiers:
            if tier.proc is not None and tier.log.exists():
                print(f"\n== {tier.name}: output so far\n{tier.log.read_text(errors='replace').rstrip()}")
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    run_all(tiers, env, host_lock)
    print(f"\n== tiers (all in {time.monotonic() - t0:.0f} s wall)")
    for tier in tiers:
        print(f"   {tier.name:<10} {verdict(tier)}")
    failed = [t.name for t in tiers if t.code not in (0, None)]
    if failed:
        print(f"== FAILED: {', '.join(failed)} (logs and temporary files kept in {work})")
        return 1
    shutil.rmtree(work, ignore_errors=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tier", action="append", choices=TIER_NAMES, help="run only this tier (repeatable)")
    parser.add_argument("pytest_args", nargs="*", help="after --: passed to every tier's pytest")
    args = parser.parse_args(argv)
    return run(args.tier or [t for t in TIER_NAMES if t not in OPT_IN_TIERS], args.pytest_args)


if __name__ == "__main__":
    sys.exit(main())

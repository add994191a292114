"""Each hardened unit's command, run as systemd runs it (root, the unit's CapabilityBoundingSet, no new
privileges), records off-CPU stacks of another user's process; the set before CAP_BPF did not, and
`doctor` under each set says so from the effective capabilities, not from the uid."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO, need_perf
from pmuprof.capture.offcpu import tracer
from pmuprof.workflows.schedule import ScheduleSpec
from pmuprof.workflows.schedule_units import service_unit

FINDINGS_EXITS = (0, 10, 20)  # --exit-code-on-findings: a loaded CI host may well be "saturated" (critical)
BEFORE_BPF = ("CAP_PERFMON", "CAP_SYS_PTRACE", "CAP_DAC_READ_SEARCH", "CAP_SYSLOG")  # the units' set until now
# Threads that block (sleep, futex) and one that spins: off-CPU and on-CPU stacks, as another user.
WAITER = """
import threading, time
def sleeper():
    while True: time.sleep(0.005)
def spinner():
    while True:
        t = time.time()
        while time.time() - t < 0.01: pass
        time.sleep(0.002)
for f in (sleeper, sleeper, spinner): threading.Thread(target=f, daemon=True).start()
time.sleep(600)
"""


@pytest.fixture(scope="module", autouse=True)
def _needs():
    need_perf()
    if not shutil.which("setpriv"):
        pytest.skip("setpriv is missing (util-linux)")
    why, _ = tracer.unavailable(())
    if why:
        pytest.skip(f"the off-CPU tracer cannot run here at all: {why}")


@pytest.fixture(scope="module")
def waiter():
    """A process of user nobody: its /proc entries are not root's (CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH)."""
    python = "/usr/bin/python3"  # readable by nobody (a pyenv interpreter under /root is not)
    proc = subprocess.Popen(
        ["setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups", python, "-c", WAITER]
    )
    yield proc
    proc.kill()
    proc.wait()


def _setting(unit: str, key: str) -> list[str]:
    return [line.split("=", 1)[1] for line in unit.splitlines() if line.startswith(key + "=")]


def _exec_argv(unit: str) -> list[str]:
    """ExecStart= as systemd splits it: quotes, then $$ and %% unescaped."""
    (line,) = _setting(unit, "ExecStart")
    return [word.replace("$$", "$").replace("%%", "%") for word in shlex.split(line)]


def _as_unit(unit: str, argv: list[str], caps: tuple[str, ...] | None = None, timeout: float = 300):
    """Run ``argv`` as the unit would: User= root, CapabilityBoundingSet= (or ``caps``), NoNewPrivileges=."""
    assert _setting(unit, "User") == ["root"] and _setting(unit, "NoNewPrivileges") == ["yes"]
    names = caps if caps is not None else tuple(_setting(unit, "CapabilityBoundingSet")[0].split())
    bounding = ",".join(["-all"] + [f"+{name.lower().removeprefix('cap_')}" for name in names])
    env = {"PATH": os.environ["PATH"], "LANG": "C.UTF-8", "HOME": "/root"}
    for value in _setting(unit, "Environment"):
        key, _, val = value.strip('"').partition("=")
        env[key] = val
    return subprocess.run(
        ["setpriv", "--bounding-set", bounding, "--no-new-privs", "--", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _nightly(tmp: Path, pid: int) -> str:
    """The nightly unit (schedule install's code) of a capture that asks for off-CPU stacks."""
    spec = ScheduleSpec(
        at="03:00",
        directory=str(tmp / "runs"),
        duration_s=3,
        exe=(sys.executable, "-m", "pmuprof"),
        pids=(pid,),
        capture_args=("--off-cpu", "--no-mysql", "-q"),
        pythonpath=str(REPO),
    )
    (tmp / "runs").mkdir()  # StateDirectory= / ReadWritePaths= exist before the unit starts
    return service_unit(spec)


def _assert_offcpu(run: Path, pid: int) -> None:
    """Off-CPU stacks with kernel names (CAP_SYSLOG) of a target whose binary was read (CAP_SYS_PTRACE)."""
    doc = json.loads((run / "run.json").read_text())
    assert doc["offcpu"]["recorded"] and doc["offcpu"]["switches"] > 0, doc["offcpu"]
    folded = (run / "offcpu.folded").read_text()
    assert any("schedule" in line for line in folded.splitlines()), folded[:2000]  # kernel frames named
    (target,) = [t for t in doc["targets"] if t["pid"] == pid]
    assert target["exe"] and target["build_id"], target


def test_nightly_unit_records_offcpu_under_its_capabilities(tmp_path, waiter):
    unit = _nightly(tmp_path, waiter.pid)
    assert "CAP_BPF" in _setting(unit, "CapabilityBoundingSet")[0].split()
    done = _as_unit(unit, _exec_argv(unit))
    assert done.returncode in FINDINGS_EXITS, done.stderr[-3000:]
    (run,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    _assert_offcpu(run, waiter.pid)


def test_nightly_unit_without_cap_bpf_fails_its_off_cpu(tmp_path, waiter):
    """The control: the set the units had before fails every --off-cpu run (exit 8), before recording."""
    unit = _nightly(tmp_path, waiter.pid)
    done = _as_unit(unit, _exec_argv(unit), BEFORE_BPF)
    assert done.returncode == 8 and "CAP_BPF" in done.stderr, done.stderr[-2000:]


def test_watch_unit_records_offcpu_under_its_capabilities(tmp_path, waiter):
    """The watch service of `--print-unit` (its cpu trigger needs no server), pointed at the waiter: -p is
    the one option a unit cannot carry (the service picks the running mysqld), so it is added here."""
    base = tmp_path / "watch"
    printed = subprocess.run(
        [sys.executable, "-m", "pmuprof", "watch", "-t", "cpu>=0", "--cycles", "1", "--interval", "0.5"]
        + ["-d", "3", "--max-captures", "1", "--no-mysql", "-o", str(base), "--print-unit"],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    unit = printed.stdout
    assert "--off-cpu" not in unit  # the default: on where cheap, i.e. whenever the capabilities allow
    done = _as_unit(unit, _exec_argv(unit) + ["-p", str(waiter.pid)])
    assert done.returncode == 0, done.stderr[-3000:]
    (run,) = [p for p in base.iterdir() if p.is_dir()]
    _assert_offcpu(run, waiter.pid)


@pytest.mark.parametrize("caps, offcpu_ok", [(None, True), (BEFORE_BPF, False)])
def test_doctor_reads_the_effective_capabilities(tmp_path, waiter, caps, offcpu_ok):
    """Under the same uid 0, doctor's tracer line follows the capability set."""
    unit = _nightly(tmp_path, waiter.pid)
    argv = [sys.executable, "-m", "pmuprof", "doctor", "--json", "--no-mysql", "-p", str(waiter.pid)]
    done = _as_unit(unit, argv, caps)
    checks = {c["id"]: c for c in json.loads(done.stdout)["checks"]}
    assert checks["offcpu"]["ok"] is offcpu_ok, checks["offcpu"]
    assert checks["perf-event-paranoid"]["ok"] and checks["capabilities"]["ok"], checks
    if not offcpu_ok:
        assert "CAP_BPF" in checks["offcpu"]["detail"], checks["offcpu"]

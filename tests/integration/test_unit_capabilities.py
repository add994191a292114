"""Each hardened unit's command, run as systemd runs it (root, the unit's CapabilityBoundingSet, no new
privileges), records off-CPU stacks of another user's process; with any one capability of the set dropped, the
nightly command loses what docs/safety.md says that capability gives (so the set holds none it does not need),
and `doctor` under each set says so from the effective capabilities, not from the uid."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import REPO, need_perf
from pmuprof.capture.offcpu import tracer
from pmuprof.workflows.schedule import ScheduleSpec
from pmuprof.workflows.schedule_units import CAPABILITIES, service_unit

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
print("ready", flush=True)
while True: time.sleep(3600)  # the main thread: blocked through every capture (the tracer's "idle" thread)
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
        ["setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups", python, "-c", WAITER],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline() == "ready\n", "the waiter exited before its threads started"
    deadline = time.monotonic() + 60  # a hang detector: the main thread goes to sleep right after "ready"
    while _state(proc.pid) != "S":
        assert time.monotonic() < deadline, f"the waiter's main thread never slept: {_state(proc.pid)}"
        time.sleep(0.05)
    yield proc
    proc.kill()
    proc.wait()


def _state(pid: int) -> str:
    """The main thread's state letter (R, S, ...) from /proc/PID/stat."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


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


def _nightly(tmp: Path, pid: int, off_cpu: tuple[str, ...] = ("--off-cpu",)) -> str:
    """The nightly unit (schedule install's code) of a capture that asks for off-CPU stacks (or not)."""
    spec = ScheduleSpec(
        at="03:00",
        directory=str(tmp / "runs"),
        duration_s=3,
        exe=(sys.executable, "-m", "pmuprof"),
        pids=(pid,),
        capture_args=(*off_cpu, "--no-mysql", "-q"),
        pythonpath=str(REPO),
    )
    (tmp / "runs").mkdir()  # StateDirectory= / ReadWritePaths= exist before the unit starts
    return service_unit(spec)


def _unit_caps(unit: str) -> tuple[str, ...]:
    return tuple(_setting(unit, "CapabilityBoundingSet")[0].split())


def _one_run(tmp: Path) -> Path:
    (run,) = [p for p in (tmp / "runs").iterdir() if p.is_dir()]
    return run


def _idle_stack(run: Path, pid: int) -> int:
    """The user stack hash the tracer walked for the waiter's main thread, blocked since before the capture and
    through it (offcpu.out's `idle TGID TID USTACK`, from /proc/TID/syscall's sp and pc); 0 when none."""
    for line in (run / "offcpu.out").read_text().splitlines():
        parts = line.split("\t")
        if parts[0] == "idle" and parts[1:3] == [str(pid), str(pid)]:
            return int(parts[3], 16)
    return 0


def _error_lines(stderr: str) -> list[str]:
    assert "Traceback" not in stderr, stderr[-3000:]
    return [line for line in stderr.splitlines() if line.startswith("pmuprof: error")]


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
    assert _unit_caps(unit) == tuple(name for name, _ in CAPABILITIES)
    done = _as_unit(unit, _exec_argv(unit))
    assert done.returncode in FINDINGS_EXITS, done.stderr[-3000:]
    run = _one_run(tmp_path)
    _assert_offcpu(run, waiter.pid)
    assert _idle_stack(run, waiter.pid), (run / "offcpu.out").read_text()[-2000:]  # the control of the DAC case


def _without_perfmon(tmp: Path, pid: int, done) -> None:
    """perf_event_paranoid 2 (Debian's): no BPF, no per-CPU perf. --off-cpu stops before recording (exit 8);
    the same unit without --off-cpu records nothing either: perf fails (exit 5). One line each, naming it."""
    (line,) = _error_lines(done.stderr)
    assert done.returncode == 8 and "no CAP_PERFMON" in line, done.stderr[-2000:]
    if int(Path("/proc/sys/kernel/perf_event_paranoid").read_text()) <= 0:
        return  # perf itself needs no capability at this setting (docs/safety.md: "at perf_event_paranoid > 0")
    (tmp / "plain").mkdir()
    plain = _nightly(tmp / "plain", pid, off_cpu=())
    again = _as_unit(plain, _exec_argv(plain), tuple(c for c in _unit_caps(plain) if c != "CAP_PERFMON"))
    (line,) = _error_lines(again.stderr)
    assert again.returncode == 5 and "CAP_PERFMON" in line, again.stderr[-2000:]


def _without_bpf(tmp: Path, pid: int, done) -> None:
    """The set the units had before: every --off-cpu run fails (exit 8), before recording, with one line."""
    (line,) = _error_lines(done.stderr)
    assert done.returncode == 8 and "no CAP_BPF" in line, done.stderr[-2000:]


def _without_ptrace(tmp: Path, pid: int, done) -> None:
    """The capture runs, off-CPU stacks included, but the target's binary (/proc/PID/exe) is not read."""
    assert done.returncode in FINDINGS_EXITS, done.stderr[-3000:]
    doc = json.loads((_one_run(tmp) / "run.json").read_text())
    (target,) = [t for t in doc["targets"] if t["pid"] == pid]
    assert doc["offcpu"]["recorded"] and not target["exe"] and not target["build_id"], target


def _without_dac_read_search(tmp: Path, pid: int, done) -> None:
    """The capture runs and reads the binary (CAP_SYS_PTRACE), but not another user's 0400 /proc/TID/syscall:
    the user stack of a thread blocked through the whole capture is unknown."""
    assert done.returncode in FINDINGS_EXITS, done.stderr[-3000:]
    run = _one_run(tmp)
    (target,) = [t for t in json.loads((run / "run.json").read_text())["targets"] if t["pid"] == pid]
    assert target["exe"] and target["build_id"], target
    assert not _idle_stack(run, pid), (run / "offcpu.out").read_text()[-2000:]


def _without_syslog(tmp: Path, pid: int, done) -> None:
    """/proc/kallsyms reads as zeros: off-CPU stacks are recorded, their kernel frames unnamed."""
    assert done.returncode in FINDINGS_EXITS, done.stderr[-3000:]
    run = _one_run(tmp)
    folded = [line for line in (run / "offcpu.folded").read_text().splitlines() if not line.startswith("#")]
    assert json.loads((run / "run.json").read_text())["offcpu"]["recorded"] and folded
    assert not any("_[k]" in line for line in folded), folded[:20]  # no kernel frame has a name
    assert any("[kernel.kallsyms]" in line for line in folded), folded[:20]


# What the nightly command loses without each capability of the units' set, as docs/safety.md says; a capability
# added to the set without a loss here fails the test (KeyError): the set holds what the capture uses, no more.
LOSSES = {
    "CAP_PERFMON": _without_perfmon,
    "CAP_BPF": _without_bpf,
    "CAP_SYS_PTRACE": _without_ptrace,
    "CAP_DAC_READ_SEARCH": _without_dac_read_search,
    "CAP_SYSLOG": _without_syslog,
}


@pytest.mark.parametrize("dropped", [name for name, _ in CAPABILITIES])
def test_nightly_unit_without_one_capability_loses_what_it_gives(tmp_path, waiter, dropped):
    unit = _nightly(tmp_path, waiter.pid)
    done = _as_unit(unit, _exec_argv(unit), tuple(c for c in _unit_caps(unit) if c != dropped))
    LOSSES[dropped](tmp_path, waiter.pid, done)


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

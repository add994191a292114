"""`doctor --strict[=SEVERITY]`: a stock VM (no PMU) with Debian's stripped server alerts only at the
severity asked for; the capability lines read the effective set (CapEff), not the uid."""

from __future__ import annotations

import pytest

from pmuprof.capture import caps
from pmuprof.cli import doctor as doctor_cli
from pmuprof.cli.main import main
from pmuprof.workflows import doctor
from pmuprof.workflows.doctor_check import Check

OK = Check("perf", "perf", True, "/usr/bin/perf", severity="error")
NO_PMU = Check("pmu", "hardware PMU", False, "no usable PMU in a VM", severity="info")
STRIPPED = Check("symbols", "symbols", False, "mariadbd 1: only .dynsym", pid=1)  # warning
NO_PERF = Check("perf", "perf", False, "perf not found", severity="error")


@pytest.mark.parametrize(
    "checks, argv, code",
    [
        ([OK, NO_PMU, STRIPPED], ["--strict=error"], 0),  # the stock VM: nothing stops a capture
        ([OK, NO_PMU, STRIPPED], ["--strict", "error"], 0),
        ([OK, NO_PMU, STRIPPED], ["--strict"], 9),  # bare: a feature is off (the unnamed InnoDB frames)
        ([OK, NO_PMU], ["--strict"], 0),  # a VM's missing PMU is expected: info
        ([OK, NO_PMU], ["--strict=info"], 9),
        ([NO_PERF, NO_PMU], ["--strict=error"], 9),
        ([NO_PERF], [], 0),  # without --strict a MISS is not an error
    ],
)
def test_strict_takes_a_severity_threshold(monkeypatch, capsys, checks, argv, code):
    monkeypatch.setattr(doctor_cli, "run_checks", lambda *a, **k: checks)
    assert main(["doctor", *argv]) == code
    capsys.readouterr()


def test_failing_orders_severities_from_the_worst():
    checks = [OK, NO_PMU, STRIPPED, NO_PERF]
    assert doctor.failing(checks, "error") == [NO_PERF]
    assert doctor.failing(checks, "warning") == [STRIPPED, NO_PERF]
    assert doctor.failing(checks, "info") == [NO_PMU, STRIPPED, NO_PERF]


def test_a_bad_threshold_is_a_usage_error(capsys):
    assert main(["doctor", "--strict=fatal"]) == 2
    assert "'fatal' is not one of" in capsys.readouterr().err


# CapEff of root under the units' bounding set (perfmon bpf sys_ptrace dac_read_search syslog), of root
# under the set before CAP_BPF, and of a full root.
UNIT_SET = f"{(1 << 38) | (1 << 39) | (1 << 19) | (1 << 2) | (1 << 34):016x}"
BEFORE_BPF = f"{(1 << 38) | (1 << 19) | (1 << 2) | (1 << 34):016x}"


def test_capeff_is_parsed_by_bit():
    assert caps.parse_status(f"Uid:\t0\t0\t0\t0\nCapEff:\t{UNIT_SET}\n") == {
        "CAP_PERFMON",
        "CAP_BPF",
        "CAP_SYS_PTRACE",
        "CAP_DAC_READ_SEARCH",
        "CAP_SYSLOG",
    }
    assert caps.parse_status("CapEff:\t000001ffffffffff\n") == set(caps.BITS)
    assert caps.parse_status("Name:\tx\n") == frozenset()


@pytest.mark.parametrize(
    "capeff, lacking",
    [(UNIT_SET, ()), (BEFORE_BPF, ("CAP_BPF",)), ("0000000000000000", ("CAP_BPF", "CAP_PERFMON"))],
)
def test_bpf_needs_cap_bpf_and_cap_perfmon_whatever_the_uid(capeff, lacking):
    assert caps.bpf_missing(caps.parse_status(f"CapEff:\t{capeff}\n")) == lacking
    assert caps.bpf_missing(frozenset({"CAP_SYS_ADMIN"})) == ()  # kernels before 5.8: CAP_SYS_ADMIN stands for both


def test_doctor_lines_follow_the_effective_set(monkeypatch):
    """Root (uid 0) with the old unit set: per-CPU sampling is fine, the tracer is not, and the line says why."""
    held = caps.parse_status(f"CapEff:\t{BEFORE_BPF}\n")
    monkeypatch.setattr(caps, "effective", lambda: held)
    from pmuprof.capture.offcpu import tracer

    why, fix = tracer.unavailable(())
    assert "CAP_BPF" in why and "CapabilityBoundingSet" in fix
    paranoid = doctor._paranoid({"perf_event_paranoid": 2}, held)
    assert paranoid.ok and "CAP_PERFMON" in paranoid.detail
    none = doctor._paranoid({"perf_event_paranoid": 2}, frozenset())
    assert not none.ok and none.severity == "error"
    capability = doctor._caps(held)
    assert capability.ok and "CAP_SYS_ADMIN" in capability.detail  # left out on purpose: said, not failed
    lacking = doctor._caps(frozenset({"CAP_PERFMON", "CAP_BPF"}))
    assert not lacking.ok and "CAP_SYS_PTRACE" in lacking.fix and "CAP_SYSLOG" in lacking.fix


def _no_such_pid() -> int:
    """A pid no process has: past the kernel's pid_max."""
    return int(open("/proc/sys/kernel/pid_max").read()) + 1


def test_a_found_server_that_exits_meanwhile_is_no_error(monkeypatch):
    """Found by the /proc scan, gone before it was read (a restart; the clean-root tier's doctor seeing the
    host's test servers come and go): info, and no connection tried; `--strict=error` stays 0."""
    gone = _no_such_pid()
    monkeypatch.setattr(doctor.target, "find_mysqld", lambda: [gone])
    tried = []
    monkeypatch.setattr(doctor, "_mysql", lambda pid, opts: tried.append(pid))
    lines = [c for c in doctor.run_checks() if c.pid == gone]
    assert [(c.id, c.ok, c.severity) for c in lines] == [("target", False, "info")], lines
    assert "exited while doctor ran" in lines[0].detail and not tried
    assert not [c for c in doctor.failing(lines, "error")]


def test_a_pid_asked_for_that_is_not_running_is_an_error(monkeypatch):
    gone = _no_such_pid()
    monkeypatch.setattr(doctor, "_mysql", lambda pid, opts: Check("mysql", "MySQL connection", False, "", pid=pid))
    lines = [c for c in doctor.run_checks(pids=(gone,)) if c.id == "target"]
    assert [(c.ok, c.severity) for c in lines] == [(False, "error")] and "no process with pid" in lines[0].detail

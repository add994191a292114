"""A native program that is missing or cannot start: doctor's line and the fix for the host it runs on."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pmuprof.cli.common import end_of_capture
from pmuprof.capture.proc import process
from pmuprof.cli.main import main
from pmuprof.errors import HelperError
from pmuprof.model.offcpu import OffCpu
from pmuprof.model.run import Run
from pmuprof.packages import LIBRARIES, OFFCPU, RUNTIME
from pmuprof.tools.native import runnable
from pmuprof.workflows import doctor_native

LOADER_SAYS = "{exe}: error while loading shared libraries: /usr/lib/x86_64-linux-gnu/libbpf.so.1: cannot open shared object file: No such file or directory"


def _script(tmp_path: Path, body: str) -> Path:
    exe = tmp_path / "pmuprof-offcpu"
    exe.write_text(f"#!/bin/sh\n{body}\n")
    exe.chmod(0o755)
    return exe


def test_startup_error_is_the_loaders_library_and_reason(tmp_path):
    broken = _script(tmp_path, f"echo '{LOADER_SAYS.format(exe='x')}' >&2; exit 127")
    assert runnable.startup_error(broken) == "libbpf.so.1: cannot open shared object file: No such file or directory"
    usage = _script(tmp_path, "echo 'usage: pmuprof-offcpu --pid PID' >&2; exit 2")
    assert runnable.startup_error(usage) == ""


@pytest.mark.parametrize("installed", [True, False])
def test_fix_names_the_runtime_package_on_any_host(monkeypatch, installed):
    monkeypatch.setattr(runnable, "installed_copy", lambda: installed)
    assert runnable.fix(OFFCPU, "libbpf.so.1: file too short") == "apt-get install libbpf1"
    assert runnable.fix(OFFCPU, "libfoo.so.9: cannot open") == "apt-get install libbpf1 libelf1 libdw1"


def test_a_missing_program_is_a_new_wheel_on_a_wheel_host_and_make_in_a_checkout(monkeypatch):
    monkeypatch.setattr(runnable, "installed_copy", lambda: True)
    wheel = runnable.fix(OFFCPU)
    assert "make -C native" not in wheel and "wheel" in wheel and "libbpf-dev" in wheel
    monkeypatch.setattr(runnable, "installed_copy", lambda: False)
    assert runnable.fix(OFFCPU).endswith("; make -C native")


def test_every_library_maps_to_a_listed_runtime_package():
    listed = {p for pkgs in RUNTIME.values() for p in pkgs}
    assert set(LIBRARIES.values()) <= listed


def test_doctor_lines_for_a_program_that_cannot_start(monkeypatch, tmp_path):
    broken = _script(tmp_path, f"echo '{LOADER_SAYS.format(exe='x')}' >&2; exit 127")
    monkeypatch.setenv("PMUPROF_PERFDATA", str(broken))
    check = doctor_native.perfdata_check()
    assert (check.id, check.ok, check.fix) == ("perfdata", False, "apt-get install libbpf1")
    assert "cannot start: libbpf.so.1" in check.detail and "perf script" in check.detail
    monkeypatch.setenv("PMUPROF_PERFDATA", "")
    assert not doctor_native.perfdata_check().ok


def test_doctor_json_has_stable_ids_severities_and_no_pid_in_names(capsys, monkeypatch):
    monkeypatch.setattr(process, "find_mysqld", lambda: [])  # the host's servers are not this test's
    assert main(["doctor", "--json", "--no-mysql", "-o", str(Path(__file__).parent)]) == 0
    checks = json.loads(capsys.readouterr().out)["checks"]
    ids = [c["id"] for c in checks]
    assert {"perf", "perf-event-paranoid", "pmu", "helper", "folder", "perfdata", "offcpu", "disk"} <= set(ids)
    assert "mysql" not in ids and ids[-1] == "target"  # --no-mysql; no server running
    for c in checks:
        assert c["severity"] in ("error", "warning", "info") and re.fullmatch(r"[a-z-]+", c["id"]), c
        assert not re.search(r"\d{2,}", c["name"]), c  # a pid lives in "pid", never in the name
        assert c["pid"] is None, c


def test_asked_for_off_cpu_that_recorded_nothing_is_exit_8():
    run = Run(offcpu=OffCpu(requested=True, recorded=False, why_not="pmuprof-offcpu exited with status 1"))
    end_of_capture(run, "r/report.html")  # the default (not asked for): a note in run.json, no error
    with pytest.raises(HelperError) as err:
        end_of_capture(run, "r/report.html", off_cpu_asked=True)
    assert err.value.exit_code == 8 and "status 1" in str(err.value) and "r/report.html" in str(err.value)
    end_of_capture(Run(offcpu=OffCpu(requested=True, recorded=True)), "r", off_cpu_asked=True)


def test_per_server_lines_carry_the_pid_outside_the_name(monkeypatch):
    from pmuprof.workflows import doctor

    monkeypatch.setattr(doctor.target, "resolve_pid", lambda pid: (_ for _ in ()).throw(HelperError("gone")))
    (line,) = doctor._target(4242)
    assert (line.id, line.name, line.pid, line.ok) == ("target", "target", 4242, False) and "4242" in line.detail

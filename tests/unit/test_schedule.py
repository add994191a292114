"""Nightly schedule text (systemd/cron), findings exit codes, and retention that spares foreign files."""

from __future__ import annotations

import datetime as dt
import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from pmuprof.workflows import schedule_io
from pmuprof.errors import UsageError
from pmuprof.workflows.schedule import (
    EXIT_CRITICAL,
    EXIT_NO_FINDINGS,
    EXIT_WARNING,
    RunEntry,
    ScheduleSpec,
    findings_exit_code,
    plan_retention,
)
from pmuprof.workflows.schedule_units import cron_text, service_unit, timer_unit

DAY = 86400.0


def _spec(**kw) -> ScheduleSpec:
    base = dict(
        at="03:00",
        directory="/var/lib/pmuprof",
        duration_s=60,
        exe="/usr/local/bin/pmuprof",
        all_mysqld=True,
        keep_days=14,
        keep_bytes=5 * 2**30,
    )
    base.update(kw)
    return ScheduleSpec(**base)


def _found(severity: str):
    from pmuprof.model.foundfile import FoundFinding

    return FoundFinding("r", severity, "t", 0.1)  # as a findings.json is read back


def test_exit_codes_by_worst_severity():
    assert findings_exit_code([]) == EXIT_NO_FINDINGS == 0
    assert findings_exit_code([_found("info")]) == 0
    assert findings_exit_code([_found("info"), _found("warning")]) == EXIT_WARNING == 10
    assert findings_exit_code([_found("warning"), _found("critical")]) == EXIT_CRITICAL == 20
    from pmuprof.findings.model import Finding

    assert findings_exit_code([Finding("r", "warning", "t", 0.1)]) == EXIT_WARNING


@pytest.mark.parametrize(
    "kw, words",
    [
        (dict(at="3am"), "HH:MM"),
        (dict(at="24:00"), "HH:MM"),
        (dict(at="03:60"), "HH:MM"),
        (dict(pids=(12,)), "one of -p"),
        (dict(all_mysqld=False), "one of -p"),
        (dict(duration_s=0), "at least 1"),
        (dict(directory="relative/dir"), "absolute"),
        (dict(directory="/var/lib/pm uprof"), "absolute"),
        (dict(directory="/var/$(x)"), "absolute"),
        (dict(directory="/var/../etc"), "absolute"),
        (dict(capture_args=("--mysql-password=secret",)), "password"),
        (dict(capture_args=("--x='a b'",)), "cannot carry"),
    ],
)
def test_spec_rejects(kw, words):
    with pytest.raises(UsageError) as err:
        _spec(**kw)
    assert words in str(err.value)


def test_units_name_time_dir_and_steps():
    service, timer = service_unit(_spec(pids=(4242,), all_mysqld=False)), timer_unit(_spec(at="3:07"))
    assert "OnCalendar=*-*-* 03:07:00" in timer and "Unit=pmuprof-nightly.service" in timer
    assert "Type=oneshot" in service and "SuccessExitStatus=10" in service
    assert "capture -p 4242 --duration 60 --exit-code-on-findings" in service
    assert "$$(date +%%Y%%m%%d-%%H%%M%%S)" in service  # systemd would expand a single $ or %
    assert "ExecStopPost=-/usr/local/bin/pmuprof schedule prune --dir /var/lib/pmuprof --keep-days 14" in service
    assert "ExecStopPost=-/usr/local/bin/pmuprof history /var/lib/pmuprof -o /var/lib/pmuprof/index.html" in service
    assert "prune" not in service_unit(_spec(keep_days=None, keep_bytes=None))
    assert "capture -p 4242,4343 --duration" in service_unit(_spec(pids=(4242, 4343), all_mysqld=False))


def test_cron_line_escapes_percent_and_keeps_exit_status():
    text = cron_text(_spec(at="23:45"))
    line = [ln for ln in text.splitlines() if not ln.startswith(("#", "SHELL"))][0]
    assert line.startswith("45 23 * * * root ")
    assert "%" not in line.replace("\\%", "")
    assert line.endswith("exit $rc' >> /var/lib/pmuprof/cron.log 2>&1")  # the status stays the job's; no mail


def _systemd_unescape(exec_line: str) -> list[str]:
    return shlex.split(exec_line.replace("$$", "$").replace("%%", "%"))


def test_unit_command_captures_into_a_dated_directory(tmp_path):
    """Run the ExecStart line as systemd would, with a stand-in pmuprof that records its argv."""
    exe = tmp_path / "pmuprof"
    exe.write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$(dirname "$0")/argv.txt"\nexit 20\n')
    exe.chmod(0o755)
    spec = _spec(exe=str(exe), directory=str(tmp_path / "runs"))
    line = [ln for ln in service_unit(spec).splitlines() if ln.startswith("ExecStart=")][0]
    proc = subprocess.run(_systemd_unescape(line[len("ExecStart=") :]), check=False)
    assert proc.returncode == 20  # the capture's findings code reaches systemd unchanged
    argv = (tmp_path / "argv.txt").read_text().split("\n")
    out_dir = argv[argv.index("-o") + 1]
    assert out_dir.startswith(str(tmp_path / "runs") + "/") and len(Path(out_dir).name) == 15  # YYYYmmdd-HHMMSS


@pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed (apt-get install systemd)"
)
def test_systemd_analyze_verify_accepts_the_units(tmp_path):
    exe = shutil.which("sh")
    spec = _spec(exe=exe, directory=str(tmp_path))
    for name, text in schedule_io.rendered(spec, systemd=True).items():  # exactly what --dry-run prints
        (tmp_path / Path(name).name).write_text(text)
    proc = subprocess.run(
        [
            "systemd-analyze",
            "verify",
            str(tmp_path / "pmuprof-nightly.service"),
            str(tmp_path / "pmuprof-nightly.timer"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    complaints = [ln for ln in proc.stderr.splitlines() if "pmuprof-nightly" in ln]
    assert proc.returncode == 0 and not complaints, proc.stderr
    # and the check can fail: a broken calendar is reported
    (tmp_path / "pmuprof-nightly.timer").write_text(timer_unit(spec).replace("03:00:00", "25:99:00"))
    bad = subprocess.run(
        ["systemd-analyze", "verify", str(tmp_path / "pmuprof-nightly.timer")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert "calendar" in bad.stderr


def _entry(name, age_days, size=100, ours=True, now=100 * DAY):
    return RunEntry(name, now - age_days * DAY, size, ours)


def test_retention_by_days_spares_foreign_and_newest():
    entries = [
        _entry("old1", 30),
        _entry("old2", 20),
        _entry("new", 1),
        _entry("foreign", 99, ours=False),
        _entry("newest-but-old", 0.5),
    ]
    plan = plan_retention(entries, 100 * DAY, keep_days=14, keep_bytes=None)
    assert [d.name for d in plan] == ["old1", "old2"]
    assert all("14 days" in d.reason for d in plan)
    # the newest run survives even when it is past the limit
    only_old = [_entry("a", 40), _entry("b", 30)]
    assert [d.name for d in plan_retention(only_old, 100 * DAY, 14, None)] == ["a"]


def test_retention_by_size_deletes_oldest_until_it_fits():
    entries = [_entry(f"r{i}", 10 - i, size=2**30) for i in range(6)]  # r0 oldest
    plan = plan_retention(entries, 100 * DAY, keep_days=None, keep_bytes=3 * 2**30)
    assert [d.name for d in plan] == ["r0", "r1", "r2"]
    assert plan_retention(entries, 100 * DAY, None, 100 * 2**30) == []


def _make_run(base: Path, name: str, started: str, marker: bool = True, extra: dict | None = None) -> Path:
    run = base / name
    run.mkdir(parents=True)
    body = {"pmuprof_version": "0.1.0", "started": started} if marker else {"started": started, "tool": "other"}
    (run / "run.json").write_text(json.dumps(body))
    (run / "stacks.folded").write_text("mysqld;main 1\n")
    (run / "perf.data").write_bytes(b"\0" * 4096)
    for fname, text in (extra or {}).items():
        (run / fname).write_text(text)
    return run


def test_prune_io_never_deletes_foreign_files(tmp_path):
    base = tmp_path / "runs"
    _make_run(base, "20240101-030000", "2024-01-01T03:00:00Z")
    _make_run(base, "20240102-030000", "2024-01-02T03:00:00Z", extra={"notes.txt": "mine, keep"})
    _make_run(base, "20240103-030000", "2024-01-03T03:00:00Z", marker=False)  # someone else's run.json
    (base / "README").write_text("foreign top-level file")
    (base / "backups").mkdir()
    (base / "backups" / "dump.sql").write_text("foreign")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "perf.data").write_text("must survive")
    (base / "link-run").symlink_to(outside)
    _make_run(base, "20240110-030000", "2024-01-10T03:00:00Z")
    now = dt.datetime(2024, 1, 11, tzinfo=dt.timezone.utc).timestamp()

    dry = schedule_io.prune(base, keep_days=5, keep_bytes=None, dry_run=True, now=now)
    assert [d.name for d, _ in dry] == ["20240101-030000", "20240102-030000"]
    assert (base / "20240101-030000").is_dir()

    done = schedule_io.prune(base, keep_days=5, keep_bytes=None, now=now)
    assert [(d.name, kept) for d, kept in done] == [("20240101-030000", []), ("20240102-030000", ["notes.txt"])]
    assert not (base / "20240101-030000").exists()
    assert sorted(os.listdir(base / "20240102-030000")) == ["notes.txt"]
    assert (base / "20240103-030000" / "perf.data").is_file()  # not pmuprof's marker: untouched
    assert (base / "README").is_file() and (base / "backups" / "dump.sql").is_file()
    assert (outside / "perf.data").read_text() == "must survive"
    assert (base / "20240110-030000" / "perf.data").is_file()


def test_prune_needs_a_limit(tmp_path):
    with pytest.raises(UsageError):
        schedule_io.prune(tmp_path, None, None)


def test_rendered_files_carry_the_spec_for_status():
    files = schedule_io.rendered(_spec(), systemd=False)
    ((name, text),) = files.items()
    assert name == "/etc/cron.d/pmuprof-nightly"
    spec_line = [ln for ln in text.splitlines() if ln.startswith(schedule_io.SPEC_PREFIX)][0]
    assert json.loads(spec_line[len(schedule_io.SPEC_PREFIX) :])["directory"] == "/var/lib/pmuprof"
    assert set(schedule_io.rendered(_spec(), systemd=True)) == {
        "/etc/systemd/system/pmuprof-nightly.service",
        "/etc/systemd/system/pmuprof-nightly.timer",
    }


def test_cron_install_status_remove_under_a_root(tmp_path):
    """The IO of install/status/remove (cron flavour: no systemctl) against a scratch root folder."""
    root, runs = tmp_path / "root", tmp_path / "runs"
    _make_run(runs, "20240101-030000", "2024-01-01T03:00:00Z")
    spec = _spec(directory=str(runs))
    assert schedule_io.install(spec, systemd=False, root=root) == [f"wrote {root}/etc/cron.d/pmuprof-nightly"]
    info = schedule_io.status(False, root=root)
    assert info["installed"] and info["spec"]["at"] == "03:00" and info["runs"] == 1
    assert info["latest"] == "20240101-030000"
    assert schedule_io.install(spec, systemd=False, root=root)  # re-install over our own file is fine
    assert schedule_io.remove(False, root=root) == [f"removed {root}/etc/cron.d/pmuprof-nightly"]
    assert not schedule_io.status(False, root=root)["installed"]
    # a foreign file with our name is neither overwritten nor removed
    foreign = root / "etc/cron.d/pmuprof-nightly"
    foreign.write_text("0 1 * * * root /usr/local/bin/backup\n")
    with pytest.raises(UsageError):
        schedule_io.install(spec, systemd=False, root=root)
    assert schedule_io.remove(False, root=root) == ["nothing installed"]
    assert foreign.read_text().startswith("0 1 * * *")


def test_cli_install_dry_run_and_prune(tmp_path, capsys):
    from pmuprof.cli.main import main

    exe = shutil.which("sh")
    assert (
        main(
            [
                "schedule",
                "install",
                "--at",
                "04:15",
                "--all-mysqld",
                "--dry-run",
                "--scheduler",
                "cron",
                "--exe",
                exe,
                "--dir",
                str(tmp_path),
                "--defaults-file",
                "/etc/pmuprof/my.cnf",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "15 4 * * * root " in out and "--defaults-file /etc/pmuprof/my.cnf -q" in out
    assert main(["schedule", "install", "--all-mysqld", "--dry-run", "--scheduler", "systemd", "--exe", exe]) == 0
    out = capsys.readouterr().out
    assert "# ---- /etc/systemd/system/pmuprof-nightly.timer" in out and "OnCalendar=*-*-* 03:00:00" in out
    assert main(["schedule", "install", "--dry-run", "--exe", exe, "--dir", str(tmp_path)]) == 2  # no target
    _make_run(tmp_path, "a", "2024-01-01T03:00:00Z")
    _make_run(tmp_path, "b", "2024-01-09T03:00:00Z")
    assert main(["schedule", "prune", "--dir", str(tmp_path), "--keep-days", "3", "--dry-run"]) == 0
    assert (tmp_path / "a").is_dir()
    assert main(["schedule", "prune", "--dir", str(tmp_path), "--keep-days", "3"]) == 0
    assert not (tmp_path / "a").exists() and (tmp_path / "b").is_dir()


def test_install_under_a_root_enables_nothing_and_status_finds_the_vendor_units(tmp_path, monkeypatch, capsys):
    """`schedule install --root DIR` (debian/rules) writes the units under DIR and calls no systemctl; a
    host with those units in /lib/systemd/system (the .deb) has a schedule that status reports."""
    from pmuprof.cli.main import main

    def no_systemctl(*args):
        raise AssertionError(f"systemctl {args} called")

    monkeypatch.setattr(schedule_io, "_systemctl", no_systemctl)
    exe = shutil.which("sh")
    argv = ["schedule", "install", "--all-mysqld", "--scheduler", "systemd", "--exe", exe, "--root", str(tmp_path)]
    assert main(argv) == 0
    units = tmp_path / "etc" / "systemd" / "system"
    assert sorted(p.name for p in units.iterdir()) == ["pmuprof-nightly.service", "pmuprof-nightly.timer"]
    assert f"exec {exe} capture --all-mysqld" in (units / "pmuprof-nightly.service").read_text()
    capsys.readouterr()
    vendor = tmp_path / "lib" / "systemd" / "system"
    vendor.parent.mkdir(parents=True)
    units.rename(vendor)  # as the package installs them
    spec = schedule_io.installed_spec(tmp_path)
    assert spec is not None and spec["directory"] == "/var/lib/pmuprof" and spec["all_mysqld"]

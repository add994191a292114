"""Scheduled runs: the executable that installed them, hardened units that systemd accepts, cron with flock/ionice."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import REPO, run_cli
from pmuprof.cli import schedule as schedule_cli
from pmuprof.errors import UsageError
from pmuprof.workflows import schedule_io
from pmuprof.workflows.schedule import ScheduleSpec
from pmuprof.workflows.schedule_units import CAPABILITIES, cron_text, fixed_offset, service_unit, timer_unit
from pmuprof.workflows.watch_unit import WatchService, watch_unit

HARDENING = (
    "Nice",
    "IOSchedulingClass",
    "CPUQuota",
    "MemoryMax",
    "OOMScoreAdjust",
    "StateDirectory",
    "ProtectSystem",
    "ProtectHome",
    "PrivateTmp",
    "NoNewPrivileges",
    "CapabilityBoundingSet",
    "UMask",
    "PrivateDevices",
    "DevicePolicy",
    "PrivateMounts",
    "ProtectProc",
    "ProtectKernelModules",
    "ProtectControlGroups",
    "ProtectClock",
    "ProtectHostname",
    "LockPersonality",
    "RestrictRealtime",
    "RestrictSUIDSGID",
    "RestrictNamespaces",
    "RestrictAddressFamilies",
    "SystemCallArchitectures",
    "SystemCallFilter",
)
MAX_EXPOSURE = 3.0  # systemd-analyze security's "OK" band starts below 4.0; the unit was 7.0 MEDIUM before


def _spec(**kw) -> ScheduleSpec:
    base = dict(
        at="03:00",
        directory="/var/lib/pmuprof",
        duration_s=60,
        exe="/usr/local/bin/pmuprof",
        all_mysqld=True,
        keep_days=14,
        keep_bytes=5 * 2**30,
        randomized_delay_s=600,
    )
    base.update(kw)
    return ScheduleSpec(**base)


def test_every_hardening_setting_is_present_and_explained_by_a_comment():
    lines = service_unit(_spec()).splitlines()
    for key in HARDENING:
        at = next(i for i, ln in enumerate(lines) if ln.startswith(key + "="))
        above = lines[at - 1]
        assert above.startswith("#") or lines[at - 1].split("=")[0] in HARDENING, (key, above)
    assert "IOSchedulingClass=idle" in lines and "NoNewPrivileges=yes" in lines
    caps = next(ln for ln in lines if ln.startswith("CapabilityBoundingSet=")).split("=", 1)[1].split()
    assert caps == [name for name, _ in CAPABILITIES]
    assert "CAP_SYS_ADMIN" not in caps  # CAP_PERFMON covers perf on kernels >= 5.8 (measured, docs/safety.md)
    assert not any(ln.startswith("ProtectKernelTunables=") for ln in lines)  # it would hide /proc/kallsyms
    assert not any(ln.startswith("ProtectKernelLogs=") for ln in lines)  # it would drop CAP_SYSLOG (kallsyms)
    assert "UMask=0077" in lines
    filtered = next(ln for ln in lines if ln.startswith("SystemCallFilter=")).split("=", 1)[1]
    assert filtered.startswith("~") and "@debug" not in filtered  # perf_event_open and bpf live in @debug


def test_state_directory_or_read_write_paths():
    assert "StateDirectory=pmuprof" in service_unit(_spec())
    other = service_unit(_spec(directory="/srv/profiles", textfile="/var/lib/prometheus/node-exporter/p.prom"))
    assert "ReadWritePaths=/srv/profiles" in other and "StateDirectory" not in other
    assert "ReadWritePaths=/var/lib/prometheus/node-exporter" in other
    assert "--textfile /var/lib/prometheus/node-exporter/p.prom" in other


def test_timer_spreads_a_fleet_with_a_fixed_offset():
    timer = timer_unit(_spec())
    assert "RandomizedDelaySec=600" in timer and "FixedRandomDelay=true" in timer
    assert "RandomizedDelaySec" not in timer_unit(_spec(randomized_delay_s=0))
    assert fixed_offset("db1", 600) == fixed_offset("db1", 600)
    assert 0 <= fixed_offset("db1", 600) <= 600 and fixed_offset("db1", 0) == 0
    assert len({fixed_offset(f"db{i}", 600) for i in range(50)}) > 25  # hosts spread out


def test_notify_command_and_pythonpath_travel_as_environment():
    spec = _spec(exe=(sys.executable, "-m", "pmuprof"), pythonpath="/opt/pmuprof", notify_cmd="/usr/bin/page --team db")
    unit = service_unit(spec)
    assert 'Environment="PMUPROF_NOTIFY_CMD=/usr/bin/page --team db"' in unit
    assert 'Environment="PYTHONPATH=/opt/pmuprof"' in unit
    assert f"exec {sys.executable} -m pmuprof capture" in unit
    cron = cron_text(spec)
    assert "PMUPROF_NOTIFY_CMD=/usr/bin/page --team db\n" in cron and "PYTHONPATH=/opt/pmuprof\n" in cron
    with pytest.raises(UsageError):
        _spec(notify_cmd="/usr/bin/page 'quoted'")
    with pytest.raises(UsageError):
        _spec(notify_cmd="/usr/bin/page $(id)")


@pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed (apt-get install systemd)"
)
def test_systemd_analyze_verify_accepts_the_hardened_units_and_rejects_a_typo(tmp_path):
    spec = _spec(
        exe=shutil.which("sh"),
        directory=str(tmp_path / "runs"),
        notify_cmd="/bin/true",
        textfile=str(tmp_path / "m.prom"),
    )
    paths = []
    for name, text in schedule_io.rendered(spec, systemd=True).items():
        paths.append(tmp_path / Path(name).name)
        paths[-1].write_text(text)
    proc = subprocess.run(["systemd-analyze", "verify", *map(str, paths)], capture_output=True, text=True)
    assert proc.returncode == 0 and "pmuprof-nightly" not in proc.stderr, proc.stderr
    service = paths[0]
    service.write_text(
        service.read_text()
        .replace("ProtectSystem=strict", "ProtectSytem=strict")
        .replace("IOSchedulingClass=idle", "IOSchedulingClass=sleepy")
    )
    bad = subprocess.run(["systemd-analyze", "verify", str(service)], capture_output=True, text=True)
    assert "ProtectSytem" in bad.stderr and "sleepy" in bad.stderr, bad.stderr  # (capability names it never checks)


def _exposure(unit: Path) -> float:
    proc = subprocess.run(
        ["systemd-analyze", "security", "--offline=true", str(unit)], capture_output=True, text=True, timeout=120
    )
    found = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", proc.stdout)
    if found is None and "--offline" in proc.stderr:
        pytest.skip(f"this systemd-analyze cannot assess a unit file offline: {proc.stderr.strip()[:100]}")
    assert found, proc.stdout[-500:] + proc.stderr[-500:]
    return float(found.group(1))


@pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed (apt-get install systemd)"
)
def test_systemd_analyze_security_rates_the_unit_at_most_3(tmp_path):
    unit = tmp_path / "pmuprof-nightly.service"
    unit.write_text(service_unit(_spec(exe=shutil.which("sh"), textfile="/var/lib/prometheus/node-exporter/p.prom")))
    assert _exposure(unit) <= MAX_EXPOSURE
    # the control: the same unit without the cheap settings is rated worse, so the bound is not vacuous
    loose = [ln for ln in unit.read_text().splitlines() if not ln.startswith(("Restrict", "Protect", "SystemCall"))]
    unit.write_text("\n".join(loose) + "\n")
    assert _exposure(unit) > MAX_EXPOSURE


def _cron_command(text: str) -> str:
    line = [ln for ln in text.splitlines() if ln and not ln.startswith("#") and "=" not in ln.split()[0]][0]
    return line.split(None, 6)[6].replace("\\%", "%")  # what cron hands to /bin/sh


@pytest.mark.skipif(not (shutil.which("flock") and shutil.which("ionice")), reason="util-linux flock/ionice missing")
def test_cron_command_runs_under_flock_and_ionice_and_keeps_the_exit_status(tmp_path):
    exe = tmp_path / "pmuprof"
    exe.write_text(
        '#!/bin/sh\n[ "$1" = capture ] || exit 0\n'
        'printf "%s %s\\n" "$(ionice -p $$)" "$(nice)" > "$(dirname "$0")/seen.txt"\n'
        'echo "captured at $(umask)"; echo "a warning" >&2\n'
        'if [ -n "$HOLD" ]; then touch "$(dirname "$0")/holding"; while [ ! -e "$(dirname "$0")/release" ]; do'
        " sleep 0.05; done; fi\nexit 20\n"
    )
    exe.chmod(0o755)
    lock = str(tmp_path / "lock")
    command = _cron_command(cron_text(_spec(exe=str(exe), directory=str(tmp_path / "runs")), lock_file=lock))
    assert "flock -n -E 75" in command and "ionice -c 3 nice -n 10" in command
    first = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, timeout=60)
    assert first.returncode == 20, first.stderr  # the findings code reaches cron's mail / the caller
    assert first.stdout == first.stderr == ""  # nothing for cron to mail every night: it is in the log
    assert (tmp_path / "runs" / "cron.log").read_text().splitlines() == ["captured at 0077", "a warning"]
    seen = (tmp_path / "seen.txt").read_text().split()
    # `nice -n 10` adds 10 to the niceness cron (here: the suite) runs at, up to 19
    assert seen[0] == "idle" and seen[-1] == str(min(19, os.getpriority(os.PRIO_PROCESS, 0) + 10)), seen
    # a second run while the first still holds the lock is skipped with EX_TEMPFAIL
    held = subprocess.Popen(["/bin/sh", "-c", command], env={**os.environ, "HOLD": "1"})
    try:
        deadline = time.monotonic() + 120  # a hang detector: the holder touches the file once it has the lock
        while not (tmp_path / "holding").exists():
            assert held.poll() is None, f"the holder exited {held.returncode} before taking the lock"
            assert time.monotonic() < deadline, "the holder did not take the lock in 120 s"
            time.sleep(0.05)
        second = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, timeout=60)
        assert second.returncode == 75  # the holder keeps the lock until told to let go
    finally:
        (tmp_path / "release").touch()
        held.wait(timeout=60)


def test_units_run_the_executable_that_installed_them(tmp_path, monkeypatch):
    real = tmp_path / "venv" / "bin" / "pmuprof"
    real.parent.mkdir(parents=True)
    real.write_text("#!/bin/sh\n")
    real.chmod(0o755)
    link = tmp_path / "bin" / "pmuprof"
    link.parent.mkdir()
    link.symlink_to(real)
    monkeypatch.setattr(sys, "argv", [str(link), "schedule", "install"])
    assert schedule_cli.self_launcher() == ((str(real),), "")
    monkeypatch.setattr(sys, "argv", [str(REPO / "pmuprof" / "__main__.py")])
    assert schedule_cli.self_launcher() == ((os.path.abspath(sys.executable), "-m", "pmuprof"), str(REPO))


def test_dry_run_under_python_dash_m_names_this_interpreter_and_checkout(tmp_path):
    """Not the first `pmuprof` on PATH: a decoy there must not be picked."""
    decoy = tmp_path / "pmuprof"
    decoy.write_text("#!/bin/sh\nexit 99\n")
    decoy.chmod(0o755)
    res = run_cli(
        "schedule",
        "install",
        "--all-mysqld",
        "--dry-run",
        "--scheduler",
        "systemd",
        "--dir",
        str(tmp_path),
        env={"PATH": f"{tmp_path}:{os.environ['PATH']}"},
    )
    assert res.returncode == 0, res.stderr
    assert str(decoy) not in res.stdout
    assert f"exec {os.path.abspath(sys.executable)} -m pmuprof capture --all-mysqld" in res.stdout
    assert f'Environment="PYTHONPATH={REPO}"' in res.stdout


def test_server_options_pass_through_and_password_env_is_refused(tmp_path):
    res = run_cli(
        "schedule",
        "install",
        "--all-mysqld",
        "--dry-run",
        "--scheduler",
        "cron",
        "--dir",
        str(tmp_path),
        "-h",
        "db1",
        "-P",
        "3307",
        "-u",
        "prof",
        "--ssl-mode",
        "verify_ca",
        "--ssl-ca",
        "ca.pem",
        "--defaults-group-suffix",
        "_prod",
    )
    assert res.returncode == 0, res.stderr
    assert "--mysql-host db1 --mysql-port 3307 --mysql-user prof" in res.stdout
    assert f"--defaults-group-suffix _prod --ssl-mode VERIFY_CA --ssl-ca {os.getcwd()}/ca.pem" in res.stdout
    bad = run_cli(
        "schedule", "install", "--all-mysqld", "--dry-run", "--dir", str(tmp_path), "--mysql-password-env", "PW"
    )
    assert bad.returncode == 2 and "--defaults-file" in bad.stderr


def test_schedule_install_passes_the_capture_options(tmp_path):
    res = run_cli(
        "schedule",
        "install",
        "--all-mysqld",
        "--dry-run",
        "--scheduler",
        "systemd",
        "--dir",
        str(tmp_path),
        "-F",
        "49",
        "--call-graph",
        "dwarf",
        "--mode",
        "per-thread",
        "--off-cpu",
    )
    assert res.returncode == 0, res.stderr
    assert (
        "capture --all-mysqld --duration 60 --exit-code-on-findings -F 49 --call-graph dwarf --mode per-thread "
        "--off-cpu -q" in res.stdout
    )
    plain = run_cli(
        "schedule",
        "install",
        "--all-mysqld",
        "--dry-run",
        "--scheduler",
        "cron",
        "--dir",
        str(tmp_path),
        "--no-off-cpu",
    )
    assert "--exit-code-on-findings --no-off-cpu -q" in plain.stdout and "--call-graph" not in plain.stdout


@pytest.mark.skipif(shutil.which("capsh") is None, reason="capsh not installed (apt-get install libcap2-bin)")
def test_capability_names_exist_on_this_kernel():
    """systemd-analyze ignores unknown capability names, so ask libcap about each one."""
    for name, _ in CAPABILITIES:
        assert subprocess.run(["capsh", f"--supports={name.lower()}"], capture_output=True).returncode == 0, name
    assert subprocess.run(["capsh", "--supports=cap_perfmun"], capture_output=True).returncode != 0


# ---- the watch service (`pmuprof watch --print-unit`)


def _watch_unit(**kw) -> str:
    base = dict(
        exe=("/usr/local/bin/pmuprof",),
        args=("-t", "state:Sending data>=5", "-o", "/var/lib/pmuprof-watch"),
        directory="/var/lib/pmuprof-watch",
    )
    base.update(kw)
    return watch_unit(WatchService(**base))


def test_watch_unit_is_hardened_like_the_nightly_one_and_restarts_on_failure_only():
    lines = _watch_unit().splitlines()
    for key in HARDENING:
        at = next(i for i, ln in enumerate(lines) if ln.startswith(key + "="))
        assert lines[at - 1].startswith("#") or lines[at - 1].split("=")[0] in HARDENING, (key, lines[at - 1])
    nightly = service_unit(_spec())
    for key in set(HARDENING) - {"StateDirectory"}:  # the same values as the nightly unit's
        assert next(ln for ln in lines if ln.startswith(key + "=")) in nightly.splitlines(), key
    for want in (
        "Type=simple",
        "Restart=on-failure",
        "RestartSec=30",
        "RestartPreventExitStatus=2 7",
        "SuccessExitStatus=143",
        "StandardOutput=journal",
        "StandardError=journal",
        "WantedBy=multi-user.target",
    ):
        assert want in lines, want
        assert lines[lines.index(want) - 1].startswith("#") or lines[lines.index(want) - 1].split("=")[0] in (
            "Type",
            "RestartSec",
            "Restart",
            "StandardOutput",
            "SuccessExitStatus",
            "TimeoutStopSec",
            "[Install]",
        ), want
    assert not any(
        ln.startswith(("PIDFile=", "Type=forking")) or ("--daemonize" in ln and not ln.startswith("#")) for ln in lines
    )
    exec_line = next(ln for ln in lines if ln.startswith("ExecStart="))
    assert shlex.split(exec_line[len("ExecStart=") :].replace("%%", "%")) == [
        "/usr/local/bin/pmuprof",
        "watch",
        "-t",
        "state:Sending data>=5",
        "-o",
        "/var/lib/pmuprof-watch",
    ]


def test_watch_unit_refuses_what_it_cannot_carry_safely():
    for bad in (
        {"args": ("-t", "x>1", "--notify-timeout", "3'0")},
        {"notify_cmd": '/bin/page "db"'},
        {"args": ("--mysql-password", "secret")},
        {"directory": "relative/dir"},
    ):
        with pytest.raises(UsageError):
            _watch_unit(**bad)
    unit = _watch_unit(directory="/srv/stalk", textfile="/var/lib/node/p.prom", notify_cmd="/bin/page --team db")
    assert "ReadWritePaths=/srv/stalk" in unit and "ReadWritePaths=/var/lib/node" in unit
    assert 'Environment="PMUPROF_NOTIFY_CMD=/bin/page --team db"' in unit


@pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed (apt-get install systemd)"
)
def test_systemd_analyze_verifies_the_watch_unit_and_rates_it_at_most_3(tmp_path):
    unit = tmp_path / "pmuprof-watch.service"
    unit.write_text(_watch_unit(exe=(shutil.which("sh"),), notify_cmd="/bin/true"))
    proc = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True)
    assert proc.returncode == 0 and "pmuprof-watch" not in proc.stderr, proc.stderr
    assert _exposure(unit) <= MAX_EXPOSURE
    loose = [ln for ln in unit.read_text().splitlines() if not ln.startswith(("Restrict", "Protect", "SystemCall"))]
    unit.write_text("\n".join(loose) + "\n")
    assert _exposure(unit) > MAX_EXPOSURE


def test_print_unit_spells_every_watch_option_so_it_parses_back_the_same(tmp_path):
    first = run_cli(
        "watch",
        "-t",
        "state:Sending data>=5",
        "-t",
        "cpu>400",
        "--cycles",
        "3",
        "--interval",
        "500ms",
        "-d",
        "1m",
        "--cooldown",
        "10m",
        "--disk-free",
        "1G",
        "-F",
        "49",
        "--keep",
        "50",
        "--keep-for",
        "7d",
        "--keep-size",
        "5G",
        "-o",
        str(tmp_path / "stalk"),
        "--defaults-file",
        "my.cnf",
        "--notify-cmd",
        "/bin/echo --team db",
        "--print-unit",
    )
    assert first.returncode == 0, first.stderr
    assert (tmp_path / "stalk").is_dir()  # outside /var/lib: ReadWritePaths= needs it to exist
    exec_line = next(ln for ln in first.stdout.splitlines() if ln.startswith("ExecStart="))
    argv = shlex.split(exec_line[len("ExecStart=") :].replace("%%", "%"))
    args = argv[argv.index("watch") + 1 :]
    assert args[:4] == ["-t", "state:Sending data>=5", "-t", "cpu>400"]
    for pair in (
        "--interval 0.5",
        "-d 60",
        "--cooldown 600",
        "--keep 50",
        "--keep-for 604800",
        f"--keep-size {5 * 2**30}",
        f"--defaults-file {os.getcwd()}/my.cnf",
        f"-o {tmp_path}/stalk",
    ):
        assert pair in " ".join(args), pair
    assert 'Environment="PMUPROF_NOTIFY_CMD=/bin/echo --team db"' in first.stdout
    again = run_cli("watch", *args, "--notify-cmd", "/bin/echo --team db", "--print-unit")
    assert again.returncode == 0 and again.stdout == first.stdout, again.stderr
    default = run_cli("watch", "-t", "cpu>400", "--no-retention", "--print-unit")
    assert "StateDirectory=pmuprof-watch" in default.stdout and "--no-retention" in default.stdout
    refused = run_cli("watch", "-t", "cpu>400", "-p", str(os.getpid()), "--print-unit")
    assert refused.returncode == 2 and "picks the running mysqld" in refused.stderr

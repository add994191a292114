"""The nightly run as systemd service + timer text, or as a cron.d file (pure: spec in, text out)."""

from __future__ import annotations

import hashlib
import shlex

from .schedule import EXIT_WARNING, UNIT_NAME, ScheduleSpec

HEADER = "# Written by `pmuprof schedule install`; remove with `pmuprof schedule remove`."
LOCK_FILE = "/run/lock/pmuprof-nightly.lock"
CRON_LOG = "cron.log"  # in the runs' directory: what the cron job printed
STATE_ROOT = "/var/lib/"
# What perf, the off-CPU tracer and pmuprof need, measured on kernel 6.18 / perf 6.1 at perf_event_paranoid 2
# by dropping capabilities one at a time (setpriv --bounding-set): see docs/safety.md "The scheduled units".
# CAP_SYS_ADMIN is left out on purpose: it would only add threads' kernel stacks (/proc/TID/stack) to
# threads.json, where wchan names the wait; tests/integration/test_unit_capabilities.py runs each unit's
# command under exactly this set.
CAPABILITIES = (
    ("CAP_PERFMON", "perf record -a / perf stat -a (and perf record -p) at perf_event_paranoid > 0"),
    ("CAP_BPF", "the off-CPU tracer's BPF programs and its on-CPU sampler (with CAP_PERFMON)"),
    ("CAP_SYS_PTRACE", "/proc/PID/exe, /proc/PID/fd/* and /proc/PID/mem of mysqld, which runs as another user"),
    (
        "CAP_DAC_READ_SEARCH",
        "another user's /proc/PID/fd (mode 0500), /proc/PID/mem (mode 0600), /proc/TID/syscall (mode 0400); "
        "mysqld's error log (mode 0640, mysql:adm)",
    ),
    ("CAP_SYSLOG", "kernel symbol addresses in /proc/kallsyms (perf sees zeros without it: unnamed kernel frames)"),
)


def systemd_quote(argv: list[str]) -> str:
    """Quote argv for an Exec line: systemd expands %specifiers and $VARS, so double both."""
    return " ".join(shlex.quote(a).replace("%", "%%").replace("$", "$$") for a in argv)


def dated_capture(spec: ScheduleSpec, percent: str) -> str:
    """A /bin/sh command line that captures into DIR/<YYYYmmdd-HHMMSS>; ``percent`` escapes %."""
    fmt = f"+{percent}Y{percent}m{percent}d-{percent}H{percent}M{percent}S"
    args = " ".join(shlex.quote(a) for a in spec.capture_argv())
    return f'exec {args} -o "{spec.directory}/$(date {fmt})"'


def _size(n: int) -> str:
    for unit, size in (("G", 2**30), ("M", 2**20), ("K", 2**10)):
        if n % size == 0:
            return f"{n // size}{unit}"
    return str(n)


def writable(directory: str, textfile: str | None) -> list[str]:
    """StateDirectory= for a directory under /var/lib (systemd creates it, owned right); else ReadWritePaths=."""
    lines = []
    if directory.startswith(STATE_ROOT) and len(directory) > len(STATE_ROOT):
        lines += [
            "# The run directories: created by systemd with this mode, the only place the run writes.",
            f"StateDirectory={directory[len(STATE_ROOT) :].rstrip('/')}",
            "StateDirectoryMode=0750",
        ]
    else:
        lines += [
            "# The run directories (created when the unit was written): the only place the run writes.",
            f"ReadWritePaths={directory}",
        ]
    if textfile:
        folder = textfile.rsplit("/", 1)[0] or "/"
        lines += [
            "# node_exporter's textfile directory: the metrics file is replaced there after each run.",
            f"ReadWritePaths={folder}",
        ]
    return lines


def below_mysqld(cpu_quota_pct: int, memory_max: int) -> list[str]:
    """Nice, idle I/O, a CPU quota and a memory cap: the run yields to mysqld and is killed before it."""
    return [
        "# Below mysqld for the CPU: perf, the folder and the report yield to queries.",
        "Nice=10",
        "# perf.data and report writes get the disk only when nothing else wants it.",
        "IOSchedulingClass=idle",
        f"# The report (perf script | fold, rules) can keep a core busy for tens of seconds: at most {cpu_quota_pct} %.",
        f"CPUQuota={cpu_quota_pct}%",
        "# A large report reached ~1 GB: past this the run is killed, never mysqld (OOMScoreAdjust too).",
        f"MemoryMax={_size(memory_max)}",
        "OOMScoreAdjust=500",
    ]


def sandbox() -> list[str]:
    caps = " ".join(name for name, _ in CAPABILITIES)
    lines = [
        "# Everything else is read-only: a bug or a crafted input cannot write outside the paths above.",
        "ProtectSystem=strict",
        "# ~/.my.cnf stays readable; perf's ~/.debug build-id cache is not written (reports are made here).",
        "ProtectHome=read-only",
        "# A private /tmp: the folder's temporary files vanish with the run, no races with other users.",
        "PrivateTmp=yes",
        "# Nothing it starts (perf, the helper, the notify command) can gain privileges via setuid files.",
        "NoNewPrivileges=yes",
        "# Only the capabilities the capture uses (kernels before 5.8 have no CAP_PERFMON: add CAP_SYS_ADMIN):",
    ]
    lines += [f"#   {name}: {why}" for name, why in CAPABILITIES]
    lines += [
        f"CapabilityBoundingSet={caps}",
        "# ProtectKernelTunables= is left off on purpose: it hides /proc/kallsyms, which perf reads.",
        "# ProtectKernelLogs= too: it drops CAP_SYSLOG, and perf then sees /proc/kallsyms as zeros.",
    ]
    return lines + _cheap_sandbox()


def _cheap_sandbox() -> list[str]:
    """Settings `systemd-analyze security` asks for that cost the capture nothing (each with its why)."""
    return [
        "# Reports hold statement digests and user@db: files the run creates are the owner's only.",
        "UMask=0077",
        "# No device nodes but /dev/null, zero, random: perf_event_open and bpf are system calls, not devices.",
        "PrivateDevices=yes",
        "DevicePolicy=closed",
        "# Mounts made in the run's namespace stay there.",
        "PrivateMounts=yes",
        "# /proc with hidepid: root (this unit's user) still sees every process, so mysqld stays visible.",
        "ProtectProc=invisible",
        "# Kernel modules cannot be loaded (perf names module symbols from /proc/kallsyms).",
        "ProtectKernelModules=yes",
        "# The cgroup tree is read-only: perf --cgroup and /proc/PID/cgroup only read it.",
        "ProtectControlGroups=yes",
        "# Neither the clock nor the host name can be changed.",
        "ProtectClock=yes",
        "ProtectHostname=yes",
        "# No personality(2) changes, realtime scheduling, setuid/setgid files or namespaces (a mysqld in a",
        "# container of its own: perf cannot enter its mount namespace, capture it from inside the container).",
        "LockPersonality=yes",
        "RestrictRealtime=yes",
        "RestrictSUIDSGID=yes",
        "RestrictNamespaces=yes",
        "# Sockets: the server's unix socket or TCP (and the notify command's network).",
        "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6",
        "# Only this architecture's system calls; none from groups the run never uses.",
        "SystemCallArchitectures=native",
        "SystemCallFilter=~@clock @cpu-emulation @module @mount @obsolete @raw-io @reboot @swap",
    ]


def service_unit(spec: ScheduleSpec) -> str:
    script = dated_capture(spec, "%%").replace("$", "$$")
    lines = [
        HEADER,
        "[Unit]",
        f"Description=pmuprof nightly capture of mysqld into {spec.directory}",
        "After=network.target mariadb.service mysql.service mysqld.service",
        "",
        "[Service]",
        "Type=oneshot",
        f"User={spec.user}",
        *below_mysqld(spec.cpu_quota_pct, spec.memory_max),
        f"TimeoutStartSec={spec.duration_s + 900}",
    ]
    for key, value in sorted(spec.environment().items()):
        lines.append(f'Environment="{key}={value}"')
    lines += writable(spec.directory, spec.textfile) + sandbox()
    lines += [
        f"ExecStart=/bin/sh -c {shlex.quote(script)}",
        "# 10 = worst finding is a warning (unit stays green, ExecMainStatus shows it);",
        "# 20 = a critical finding: the unit fails so monitoring of failed units alerts.",
        f"SuccessExitStatus={EXIT_WARNING}",
    ]
    if spec.keep_days is not None or spec.keep_bytes is not None:
        lines.append(f"ExecStopPost=-{systemd_quote(spec.prune_argv())}")
    lines.append(f"ExecStopPost=-{systemd_quote(spec.history_argv())}")
    return "\n".join(lines) + "\n"


def timer_unit(spec: ScheduleSpec) -> str:
    hour, minute = spec.hour_minute
    lines = [
        HEADER,
        "[Unit]",
        f"Description=pmuprof nightly capture at {spec.at}",
        "",
        "[Timer]",
        f"OnCalendar=*-*-* {hour:02d}:{minute:02d}:00",
        "# A run missed while the host was down starts at boot.",
        "Persistent=true",
    ]
    if spec.randomized_delay_s:
        lines += [
            "# Spread a fleet's captures (and their load on shared storage) over this window;",
            "# FixedRandomDelay keeps each host's offset, so its runs stay 24 h apart and comparable.",
            f"RandomizedDelaySec={spec.randomized_delay_s}",
            "FixedRandomDelay=true",
        ]
    lines += [f"Unit={UNIT_NAME}.service", "", "[Install]", "WantedBy=timers.target"]
    return "\n".join(lines) + "\n"


def fixed_offset(hostname: str, window_s: int) -> int:
    """A host's delay within the window, the same every night (cron's stand-in for FixedRandomDelay)."""
    if window_s <= 0:
        return 0
    return int(hashlib.sha256(hostname.encode()).hexdigest(), 16) % (window_s + 1)


def cron_text(spec: ScheduleSpec, offset_s: int = 0, lock_file: str = LOCK_FILE) -> str:
    """An /etc/cron.d file: capture, then prune and history; exits with the capture's status.

    flock -n skips a night while the previous run still holds the lock; ionice -c 3 and nice 10
    keep the run below mysqld. cron has no memory cap (a ulimit -v would break perf's mmap).
    """
    hour, minute = spec.hour_minute
    steps = [dated_capture(spec, "\\%").replace("exec ", "", 1), "rc=$?"]
    if spec.keep_days is not None or spec.keep_bytes is not None:
        steps.append(" ".join(shlex.quote(a) for a in spec.prune_argv()))
    steps += [" ".join(shlex.quote(a) for a in spec.history_argv()), "exit $rc"]
    body = "; ".join(steps)
    sleep = f"sleep {offset_s}; " if offset_s else ""
    env = [f"{key}={value}" for key, value in sorted(spec.environment().items())]
    log = f"{spec.directory}/{CRON_LOG}"
    return (
        "\n".join(
            [
                HEADER,
                "# umask 077: reports hold statement digests and user@db. Output goes to the log beside the",
                f"# runs ({CRON_LOG}), not to a nightly mail from cron.",
                "SHELL=/bin/sh",
                *env,
                f"{minute} {hour} * * * {spec.user} umask 077; mkdir -p {spec.directory} && {sleep}exec flock -n -E 75 "
                f"{lock_file} ionice -c 3 nice -n 10 /bin/sh -c '{body}' >> {log} 2>&1",
            ]
        )
        + "\n"
    )

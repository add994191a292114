"""`pmuprof watch` as a long-running systemd service: the unit text (pure: options in, text out)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import UsageError
from .schedule import safe_path, run_environment
from .schedule_units import below_mysqld, sandbox, systemd_quote, writable

UNIT_NAME = "pmuprof-watch"
HEADER = (
    f"# Written by `pmuprof watch --print-unit`: save as /etc/systemd/system/{UNIT_NAME}.service, then\n"
    f"# systemctl daemon-reload && systemctl enable --now {UNIT_NAME} (docs/safety.md)."
)
DEFAULT_DIR = "/var/lib/pmuprof-watch"  # under /var/lib: systemd creates it (StateDirectory=)
_UNSAFE = re.compile(r"['\"\\\x00-\x1f\x7f]")
# Exit statuses that a restart cannot fix: a usage error (2) and a broken rules directory (7).
NO_RESTART = (2, 7)
RESTART_S = 30
START_LIMIT = (20, 3600)  # restarts within seconds: ~10 min of a server that stays down, then the unit fails
STOP_TIMEOUT_S = 600  # a SIGTERM during a capture: perf stops, the report of what was captured is written


@dataclass(frozen=True)
class WatchService:
    """What the unit runs: ``exe`` + ``watch`` + ``args`` (already spelled for a unit: absolute paths)."""

    exe: tuple[str, ...]
    args: tuple[str, ...]
    directory: str
    pythonpath: str = ""
    textfile: str | None = None
    notify_cmd: str | None = None  # goes in the environment (PMUPROF_NOTIFY_CMD), as for the nightly unit
    user: str = "root"
    cpu_quota_pct: int = 100
    memory_max: int = 2 * 2**30

    def __post_init__(self) -> None:
        safe_path(self.directory, "-o")
        safe_path(self.exe[0], "pmuprof executable")
        for path, what in ((self.pythonpath, "PYTHONPATH"), (self.textfile, "--textfile")):
            if path:
                safe_path(path, what)
        for arg in self.exe[1:] + self.args + ((self.notify_cmd,) if self.notify_cmd else ()):
            if _UNSAFE.search(arg):
                raise UsageError(
                    f"watch option {arg!r} holds a quote, backslash or control character",
                    "a unit file cannot carry it safely: spell the option without them",
                )
            if "password" in arg.lower() and "file" not in arg.lower():
                raise UsageError(
                    "a password in a unit file is readable by every local user",
                    "put it in a client option file and pass --defaults-file",
                )

    def environment(self) -> dict[str, str]:
        return run_environment(self.pythonpath, self.notify_cmd)


def watch_unit(svc: WatchService) -> str:
    """A Type=simple service running watch in the foreground, hardened like the nightly unit."""
    burst, within = START_LIMIT
    lines = [
        HEADER,
        "[Unit]",
        f"Description=pmuprof watch: triggered captures of mysqld into {svc.directory}",
        "After=network.target mariadb.service mysql.service mysqld.service",
        f"# Restarted at most {burst} times in {within // 60} min (a server down longer): then the unit fails,",
        "# so monitoring of failed units sees it; `systemctl restart` resumes.",
        f"StartLimitIntervalSec={within}",
        f"StartLimitBurst={burst}",
        "",
        "[Service]",
        "# watch runs in the foreground: systemd keeps the process (no --daemonize, no pid file).",
        "Type=simple",
        f"User={svc.user}",
        *below_mysqld(svc.cpu_quota_pct, svc.memory_max),
    ]
    lines += [f'Environment="{key}={value}"' for key, value in sorted(svc.environment().items())]
    lines += writable(svc.directory, svc.textfile) + sandbox()
    lines += [
        "# Each poll, trigger, capture and retention deletion is one line in the journal (journalctl -u",
        f"# {UNIT_NAME}); the journal stamps the time.",
        "StandardOutput=journal",
        "StandardError=journal",
        f"ExecStart={systemd_quote([*svc.exe, 'watch', *svc.args])}",
        "# The server restarted (watch picks the running mysqld again) or polling failed 30 times: start over.",
        "Restart=on-failure",
        f"RestartSec={RESTART_S}",
        "# A bad trigger or option, or a broken rules directory, fails the same way every time: no restart.",
        f"RestartPreventExitStatus={' '.join(map(str, NO_RESTART))}",
        "# `systemctl stop` sends SIGTERM: watch stops perf, reports what it captured and exits 143 (128 + 15).",
        "SuccessExitStatus=143",
        f"TimeoutStopSec={STOP_TIMEOUT_S}",
        "",
        "[Install]",
        "WantedBy=multi-user.target",
    ]
    return "\n".join(lines) + "\n"

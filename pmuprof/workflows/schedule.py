"""Nightly runs as data: the schedule spec, findings exit codes and retention planning (pure)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any
from collections.abc import Iterable, Mapping

from ..errors import UsageError
from ..findings.model import Finding
from ..model import rundir
from ..model.foundfile import FoundFinding

UNIT_NAME = "pmuprof-nightly"
CRON_FILE = "/etc/cron.d/pmuprof-nightly"
MARKER = "pmuprof_version"  # a run.json written by pmuprof carries this key
# exit status of `pmuprof capture --exit-code-on-findings` (errors keep their own codes 1-8, 130)
EXIT_NO_FINDINGS = 0
EXIT_WARNING = 10
EXIT_CRITICAL = 20
# files a pmuprof run directory may hold; nothing else is ever deleted
RUN_FILES = rundir.RUN_FILES | {"perf.script", "perf.stat", "stat.json", "capture.log", "flame.svg"}
_SAFE_PATH = re.compile(r"^/[A-Za-z0-9_./+@:-]*$")
_SAFE_ARG = re.compile(r"^[A-Za-z0-9_./+@:=,-]+$")
_SAFE_WORDS = re.compile(r"^[A-Za-z0-9_./+@:=,-]+( [A-Za-z0-9_./+@:=,-]+)*$")
_AT = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")


def findings_exit_code(findings: Iterable[Finding | FoundFinding]) -> int:
    """0 when no warning/critical finding, 10 for the worst being a warning, 20 for a critical: of the
    engine's findings, or of a findings.json read back (model.foundfile)."""
    severities = {f.severity for f in findings}
    if "critical" in severities:
        return EXIT_CRITICAL
    if "warning" in severities:
        return EXIT_WARNING
    return EXIT_NO_FINDINGS


def safe_path(path: str, what: str) -> str:
    if not _SAFE_PATH.match(path) or "/../" in path + "/":
        raise UsageError(
            f"{what} {path!r} must be an absolute path of letters, digits and _./+@:-",
            "unit files and cron lines cannot quote other characters safely",
        )
    return path


@dataclass(frozen=True)
class ScheduleSpec:
    """A nightly capture: when, of what, for how long, where, how much to keep, and how it is run."""

    at: str
    directory: str
    duration_s: int
    exe: tuple[str, ...] | str  # argv that runs this pmuprof: (script,) or (python, -m, pmuprof)
    pids: tuple[int, ...] = ()
    all_mysqld: bool = False
    keep_days: int | None = None
    keep_bytes: int | None = None
    capture_args: tuple[str, ...] = ()  # e.g. --defaults-file /etc/pmuprof/my.cnf
    user: str = "root"
    pythonpath: str = ""  # where the package lives when exe is `python -m pmuprof`
    randomized_delay_s: int = 0  # spread a fleet's runs over this window (fixed per host)
    cpu_quota_pct: int = 100  # systemd CPUQuota= (100 = one core)
    memory_max: int = 2 * 2**30  # systemd MemoryMax= in bytes
    textfile: str | None = None  # Prometheus metrics file written after each run
    notify_cmd: str | None = None  # command run after each run (verdict and report path appended)

    def __post_init__(self) -> None:
        if isinstance(self.exe, str):
            object.__setattr__(self, "exe", (self.exe,))
        object.__setattr__(self, "exe", tuple(self.exe))
        object.__setattr__(self, "capture_args", tuple(self.capture_args))
        if not _AT.match(self.at):
            raise UsageError(f"--at {self.at!r}: expected HH:MM (24 h)", "e.g. --at 03:00")
        object.__setattr__(self, "pids", tuple(self.pids))
        if bool(self.pids) == self.all_mysqld:
            raise UsageError(
                "give one of -p PID[,PID...] or --all-mysqld", "--all-mysqld survives server restarts; a PID does not"
            )
        if self.duration_s < 1:
            raise UsageError("--duration must be at least 1 second", "e.g. --duration 60")
        safe_path(self.directory, "--dir")
        safe_path(self.exe[0], "pmuprof executable")
        for path, what in ((self.pythonpath, "PYTHONPATH"), (self.textfile, "--textfile")):
            if path:
                safe_path(path, what)
        for arg in tuple(self.exe)[1:] + self.capture_args:
            _safe_arg(arg)
        if self.notify_cmd is not None and not _SAFE_WORDS.match(self.notify_cmd):
            raise UsageError(
                f"--notify-cmd {self.notify_cmd!r} has characters a unit file cannot carry safely",
                "use a script path and words of letters, digits, spaces and _./+@:=,-",
            )
        if not 1 <= self.cpu_quota_pct <= 100000 or self.memory_max < 64 * 2**20 or self.randomized_delay_s < 0:
            raise UsageError(
                "--cpu-quota must be 1..100000 %, --memory-max at least 64M, the delay >= 0",
                "e.g. --cpu-quota 100 --memory-max 2G --randomized-delay 10m",
            )

    @property
    def hour_minute(self) -> tuple[int, int]:
        hour, minute = self.at.split(":")
        return int(hour), int(minute)

    def capture_argv(self) -> list[str]:
        """`pmuprof capture` arguments except -o (the dated directory is added at run time)."""
        target = ["--all-mysqld"] if self.all_mysqld else ["-p", ",".join(map(str, self.pids))]
        textfile = ["--textfile", self.textfile] if self.textfile else []
        return [
            *self.exe,
            "capture",
            *target,
            "--duration",
            str(self.duration_s),
            "--exit-code-on-findings",
            *textfile,
            *self.capture_args,
        ]

    def prune_argv(self) -> list[str]:
        argv = [*self.exe, "schedule", "prune", "--dir", self.directory]
        if self.keep_days is not None:
            argv += ["--keep-days", str(self.keep_days)]
        if self.keep_bytes is not None:
            argv += ["--keep-size", str(self.keep_bytes)]
        return argv

    def history_argv(self) -> list[str]:
        return [*self.exe, "history", self.directory, "-o", str(PurePosixPath(self.directory) / "index.html")]

    def environment(self) -> dict[str, str]:
        return run_environment(self.pythonpath, self.notify_cmd)


def run_environment(pythonpath: str, notify_cmd: str | None) -> dict[str, str]:
    """Variables a unit's runs need: where the package is (python -m), the notify command."""
    env = {}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    if notify_cmd:
        env["PMUPROF_NOTIFY_CMD"] = notify_cmd
    return env


def _safe_arg(arg: str) -> str:
    if not _SAFE_ARG.match(arg):
        raise UsageError(
            f"capture option {arg!r} has characters a unit file cannot carry safely",
            "use letters, digits and _./+@:=,- only (put secrets in an option file)",
        )
    if "password" in arg.lower() and "file" not in arg.lower():
        raise UsageError(
            "a password in a unit file is readable by every local user",
            "put it in a client option file and pass --defaults-file",
        )
    return arg


@dataclass(frozen=True)
class RunEntry:
    """A directory directly under the schedule directory, as retention sees it."""

    name: str
    started: float  # epoch seconds (run.json 'started', else the directory mtime)
    size: int  # bytes of pmuprof-written files inside
    is_pmuprof: bool  # has a run.json carrying the pmuprof marker
    busy: bool = False  # a capture is writing it now: counted, never deleted


@dataclass(frozen=True)
class Deletion:
    name: str
    reason: str
    size: int


def is_pmuprof_run(run_json: Any) -> bool:
    return isinstance(run_json, Mapping) and MARKER in run_json


def plan_retention(
    entries: Iterable[RunEntry],
    now: float,
    keep_days: float | None,
    keep_bytes: int | None,
    keep_count: int | None = None,
) -> list[Deletion]:
    """Which pmuprof runs to delete, oldest first: older than keep_days, then the oldest beyond the newest
    keep_count runs, then the oldest until the total fits keep_bytes. The newest run and busy runs (a
    capture in progress) are always kept, and count; non-pmuprof entries are never listed."""
    runs = sorted((e for e in entries if e.is_pmuprof), key=lambda e: (e.started, e.name))
    if len(runs) <= 1:
        return []
    newest = runs[-1]
    kept = [e for e in runs[:-1] if not e.busy]
    out: list[Deletion] = []
    if keep_days is not None:
        cutoff = now - keep_days * 86400
        for entry in [e for e in kept if e.started < cutoff]:
            out.append(Deletion(entry.name, f"older than {age_text(keep_days * 86400)}", entry.size))
            kept.remove(entry)
    if keep_count is not None:
        excess = len(kept) + 1 + sum(e.busy for e in runs[:-1]) - keep_count  # + the newest and busy ones
        for entry in kept[: max(0, excess)]:
            out.append(Deletion(entry.name, f"beyond the newest {keep_count}", entry.size))
        kept = kept[max(0, excess) :]
    if keep_bytes is not None:
        total = newest.size + sum(e.size for e in runs[:-1] if e.busy) + sum(e.size for e in kept)
        for entry in list(kept):
            if total <= keep_bytes:
                break
            out.append(Deletion(entry.name, f"over the {keep_bytes // 2**20} MiB budget", entry.size))
            total -= entry.size
    return out


def age_text(seconds: float) -> str:
    """``14 days``, ``36 h``, ``90 min``: a retention age as people write it."""
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size:g} {'day' if seconds == size else unit}"
    return f"{seconds:g} s"

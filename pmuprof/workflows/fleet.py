"""After each run: write the Prometheus textfile atomically and run the notify command (no shell, bounded)."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Callable, Iterable

from ..errors import FactsError, UsageError
from ..findings.diagnosis import Diagnosis
from ..model.profile import Profile
from ..model.rundir import REPORT_HTML
from ..report.metrics import RunMetrics, last_success, render_metrics
from ..report.summary import verdict_line
from .schedule import EXIT_CRITICAL, EXIT_WARNING

Log = Callable[[str], None]
OUTPUT_LIMIT = 4096  # bytes of the notify command's output kept for the log


@dataclass(frozen=True)
class Notify:
    """A command run after each run as argv (never through a shell), with the verdict and report path."""

    argv: tuple[str, ...]
    timeout_s: float = 30.0

    @classmethod
    def parse(cls, text: str, timeout_s: float = 30.0) -> Notify:
        try:
            argv = tuple(shlex.split(text))
        except ValueError as err:
            raise UsageError(f"--notify-cmd {text!r}: {err}", "quote it like a shell word list") from None
        if not argv:
            raise UsageError("--notify-cmd is empty", "give a program, e.g. --notify-cmd /usr/local/bin/page-dba")
        if not (shutil.which(argv[0]) or (os.path.isfile(argv[0]) and os.access(argv[0], os.X_OK))):
            raise UsageError(f"--notify-cmd: {argv[0]!r} is not an executable", "give its absolute path")
        return cls(argv, timeout_s)


@dataclass(frozen=True)
class Publish:
    """Where a run reports to besides its run directory."""

    textfile: Path | None = None
    notify: Notify | None = None

    def check(self) -> None:
        """Refuse before a capture starts, not after it: the textfile's directory must be writable."""
        if self.textfile is None:
            return
        if not self.textfile.name.endswith(".prom"):
            raise UsageError(
                f"--textfile {self.textfile}: node_exporter reads only *.prom files",
                "e.g. --textfile /var/lib/prometheus/node-exporter/pmuprof.prom",
            )
        folder = self.textfile.parent
        if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
            raise UsageError(
                f"--textfile {self.textfile}: {folder} is not a writable directory",
                "create it, or point --textfile at node_exporter's --collector.textfile.directory",
            )


@dataclass(frozen=True)
class Outcome:
    """How one run ended: exit status, and the analysed profile and findings when it got that far."""

    exit_code: int
    run_dir: Path | None = None
    profile: Profile | None = None
    diagnosis: Diagnosis = Diagnosis()
    error: str = ""
    ended: float = 0.0


def hostname(profile: Profile | None) -> str:
    """The host label: what run.json recorded, else this host's name."""
    recorded = profile.run.host.hostname if profile is not None else ""
    return recorded or socket.gethostname()


def verdict(outcome: Outcome) -> str:
    if outcome.error:
        return f"ERROR (exit {outcome.exit_code}): {' '.join(outcome.error.split())}"[:300]
    profile = outcome.profile
    return verdict_line(outcome.diagnosis, profile.total if profile else 0, hostname(profile))


def facts_missing(profile: Profile, asked: bool, what: str) -> FactsError | None:
    """The degraded run: server facts were asked for (no --no-mysql) about a mysqld / mariadbd target, and the
    run has none (mysql.json says why). ``what`` is the report, which was written."""
    if not asked or not any(t.is_mysqld for t in profile.run.targets):
        return None
    server = profile.server
    if server is not None and server.reachable:
        return None
    why = (server.error if server is not None else "") or "no mysql.json"
    return FactsError(
        f"server facts not collected ({' '.join(why.split())[:300]}); the report has the stacks only: {what}",
        "pass --mysql-socket / -u / --defaults-file (check them with `pmuprof doctor`), or --no-mysql",
    )


def succeeded(outcome: Outcome) -> bool:
    """A run that ended with its report: exit 0, or the findings' own 10 / 20 (--exit-code-on-findings)."""
    return not outcome.error and outcome.exit_code in (0, EXIT_WARNING, EXIT_CRITICAL)


def _previous_success(path: Path, source: str) -> float | None:
    try:
        return last_success(path.read_text(encoding="utf-8", errors="replace"), source)
    except OSError:
        return None


def write_textfile(path: Path, text: str) -> None:
    """Write ``path`` atomically: a temp file in the same directory (not *.prom, so node_exporter
    skips it), fsync, mode 0644, rename over the old file."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=str(path.parent))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def run_notify(notify: Notify, line: str, report: str, outcome: Outcome) -> tuple[int | None, str]:
    """Run the command with VERDICT and REPORT appended; (exit status or None on timeout, its output)."""
    env = {
        **os.environ,
        "PMUPROF_VERDICT": line,
        "PMUPROF_REPORT": report,
        "PMUPROF_RUN_DIR": str(outcome.run_dir or ""),
        "PMUPROF_EXIT_CODE": str(outcome.exit_code),
    }
    proc = subprocess.Popen(
        [*notify.argv, line, report],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=notify.timeout_s)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # its own session: children die with it
        out, _ = proc.communicate()
        code = None
    return code, out[:OUTPUT_LIMIT].decode("utf-8", "replace")


def publish(target: Publish, outcome: Outcome, log: Log) -> None:
    """Textfile, then notification; a failure of either is logged, never raised (the run is done)."""
    ended = outcome.ended or time.time()
    if target.textfile is not None:
        source = target.textfile.name[: -len(".prom")]
        metrics = RunMetrics(
            hostname(outcome.profile),
            source,
            ended,
            outcome.exit_code,
            outcome.profile,
            outcome.diagnosis,
            succeeded(outcome),
            _previous_success(target.textfile, source),
        )
        try:
            write_textfile(target.textfile, render_metrics(metrics))
            log(f"metrics: {target.textfile}")
        except OSError as err:
            log(f"warning: metrics not written to {target.textfile}: {err}")
    if target.notify is not None:
        line = verdict(outcome)
        report = (
            str(outcome.run_dir / REPORT_HTML) if outcome.run_dir and (outcome.run_dir / REPORT_HTML).exists() else ""
        )
        try:
            code, out = run_notify(target.notify, line, report, outcome)
        except OSError as err:
            log(f"warning: --notify-cmd failed to start: {err}")
            return
        status = f"timed out after {target.notify.timeout_s:g} s (killed)" if code is None else f"exit {code}"
        log(f"notify: {target.notify.argv[0]} {status}" + (f": {_first(out)}" if out.strip() else ""))


def _first(text: str) -> str:
    lines: Iterable[str] = (x for x in text.splitlines() if x.strip())
    return next(iter(lines), "")[:200]

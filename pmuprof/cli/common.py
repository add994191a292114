"""Options and progress output shared by the capture commands."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import TypeVar
from collections.abc import Callable, Sequence

import click

from .. import signals
from ..analysis.binaries import Lookup
from ..analysis.load import Choice
from ..capture.record import MAX_DURATION_S, RecordOptions, record
from ..errors import HelperError, Interrupted, PerfError, PmuprofError, ResourceError
from ..findings.diagnosis import Diagnosis
from ..findings.loader import load_rules
from ..findings.schema import Rule
from ..model import rundir
from ..model.run import Run
from ..pipeline import Options
from .params import DURATION_HELP, Duration, Pids, flat_pids, pid_options

T = TypeVar("T")


def progress_printer(enabled: bool):
    """A progress callback writing one self-updating line to stderr (only on a terminal)."""
    tty = enabled and sys.stderr.isatty()

    def show(elapsed: float, duration: float, size: int) -> None:
        if tty:
            sys.stderr.write(
                f"\r  {elapsed:5.1f}/{duration:g} s, {duration - elapsed:5.1f} s left, "
                f"perf.data {size / 2**20:6.1f} MiB "
            )
            sys.stderr.flush()

    return show if tty else None


def log(message: str) -> None:
    if sys.stderr.isatty():
        sys.stderr.write("\r\033[K")
    click.echo(f"pmuprof: {message}", err=True)


CALL_GRAPHS = ("fp", "dwarf", "lbr")
MODES = ("per-cpu", "per-thread")


def capture_options(func=None, *, off_cpu_default: bool | None = False):
    """-p/--all-mysqld/--duration/--frequency/--call-graph/--mode/--event/-o, shared by record and capture;
    ``off_cpu_default`` None: --off-cpu on where it is cheap (capture)."""
    if func is None:
        return lambda f: capture_options(f, off_cpu_default=off_cpu_default)
    opts = [
        pid_options("Target pid"),
        click.option("--all-mysqld", is_flag=True, help="Profile every running mysqld / mariadbd."),
        click.option(
            "-d",
            "--duration",
            type=Duration(0.1, MAX_DURATION_S),
            default="30s",
            show_default=True,
            help=f"How long to record ({DURATION_HELP}).",
        ),
        click.option("-F", "--frequency", type=int, default=99, show_default=True, help="Samples per second per CPU."),
        click.option(
            "--call-graph",
            type=click.Choice(CALL_GRAPHS),
            default="fp",
            show_default=True,
            help="Stack walking: frame pointers, DWARF (32 KB stack copies), or Intel LBR.",
        ),
        click.option(
            "--mode",
            type=click.Choice(MODES),
            default="per-cpu",
            show_default=True,
            help="per-cpu: perf record -a filtered to the targets (cheap); per-thread: perf record -p.",
        ),
        click.option("-e", "--event", default="cycles", show_default=True, help="Sampling event."),
        click.option("--per-thread-roots", is_flag=True, help="Add one root frame per thread in the flame graph."),
        click.option(
            "--off-cpu/--no-off-cpu",
            default=off_cpu_default,
            show_default=off_cpu_default is not None,
            help="Also sum the time threads spend waiting, per stack, in the kernel (BPF, root only): "
            "offcpu.folded and threads.json."
            + (
                ""
                if off_cpu_default is not None
                else " Default: on where it is cheap (root, pmuprof-offcpu built, kernel 6.16+ with BTF: "
                "stacks only for waits of 1 ms or more), else off."
            ),
        ),
        click.option("--no-keep-perf-data", is_flag=True, help="Delete perf.data after folding (saves disk)."),
        click.option(
            "-o",
            "--output",
            "out_dir",
            type=click.Path(file_okay=False),
            default=None,
            help="Run directory to create, mode 0700 (default ./pmuprof-<comm>-<time>-<random>); an existing one "
            "only when it is yours, mode 0700 and empty (`mktemp -d`).",
        ),
        click.option(
            "--share",
            is_flag=True,
            help="Let other local users read the run directory (mode 0755): the kernel's symbols (kallsyms.gz) are "
            "not kept, processlist.tsv has no user, db or statement, perf.data and offcpu.out stay yours alone.",
        ),
        click.option("-q", "--quiet", is_flag=True, help="No progress line."),
    ]
    for opt in reversed(opts):
        func = opt(func)
    return func


def input_options(func):
    """--pid/--comm (which processes of a system-wide input), --symfs/--binary (where the binaries are)."""
    opts = [
        click.option(
            "--pid",
            "pids",
            type=Pids(),
            multiple=True,
            help="Keep only these processes (system-wide inputs); several as --pid 1,2 or --pid 1 --pid 2.",
        ),
        click.option("--comm", "comms", multiple=True, help="Keep processes with a thread of this name."),
        click.option(
            "--symfs",
            type=click.Path(exists=True, file_okay=False),
            default=None,
            help="Look for binaries and debug files under this directory first (like perf --symfs).",
        ),
        click.option(
            "--binary",
            "binaries",
            type=click.Path(exists=True, dir_okay=False),
            multiple=True,
            help="A binary that ran (matched by build-id; repeat for several).",
        ),
    ]
    for opt in reversed(opts):
        func = opt(func)
    return func


def pipeline_options(pids=(), comms=(), symfs=None, binaries=(), per_thread: bool = False):
    """pipeline.Options from input_options' values."""
    return Options(
        Choice(flat_pids(pids), tuple(comms), per_thread),
        Lookup(symfs=Path(symfs) if symfs else None, binaries=tuple(Path(b) for b in binaries)),
    )


def say_findings(diagnosis: Diagnosis, top: int = 3, chains: bool = False) -> None:
    """The top causes on stderr, each with the findings it explains (the diagnosis's groups, as report.md)."""
    for group in diagnosis.groups[:top]:
        finding = group.cause
        chain = " ← ".join(finding.chain[:4]) if chains else ""
        log(f"  [{finding.severity}] {finding.title} ({finding.share:.0%})" + (f": {chain}" if chain else ""))
        if group.consequences:
            log("      explains: " + "; ".join(f"{f.title} ({f.share:.0%})" for f in group.consequences))
    if len(diagnosis.groups) > top:
        log(f"  … and {len(diagnosis.groups) - top} more in the report")


def say_problems(profile, run_warnings: bool = False, more: Sequence[str] = ()) -> None:
    """Binary problems (missing, build-id mismatch, debuginfod) once on stderr, as the report shows them;
    ``run_warnings``: run.json's and the loader's too (a damaged file left out), for a report of a run
    directory whose capture is over (a capture said its own as they came); ``more``: the command's own."""
    lines = tuple(more) + (profile.run.warnings if run_warnings else ()) + tuple(profile.analysis.warnings)
    for line in dict.fromkeys(lines):
        log(f"warning: {line}")


def check_rules() -> tuple[Rule, ...]:
    """Load the rules in use ($PMUPROF_RULES or the installed ones) before recording: exit 7 now, not later;
    the report is then judged by these (not read again from disk after the capture)."""
    return load_rules()


def stopped(err: BaseException, out_dir: Path) -> Interrupted:
    """A stop signal outside the recording window, as one line that says what was kept."""
    name = signals.name_of(err)
    code = err.exit_code if isinstance(err, signals.StopSignal) else 130
    if (out_dir / rundir.PERF_DATA).is_file() and rundir.is_run_dir(out_dir):
        return Interrupted(
            f"interrupted ({name}) before the report was built; the run directory {out_dir} is complete",
            f"`pmuprof report {out_dir}` builds the report later",
            code,
        )
    return Interrupted(f"interrupted ({name}) before recording started", "", code)


def recorded(opts: RecordOptions, quiet: bool) -> Path:
    """record() with the CLI's progress line and log; a stop signal outside the window is one line."""
    try:
        return record(opts, progress_printer(not quiet), log)
    except signals.STOPS as err:
        raise stopped(err, opts.out_dir) from None


def after_record(out_dir: Path, build: Callable[[], T]) -> tuple[T, int]:
    """Fold/report a recorded run directory, and the stop signal that came meanwhile (0: none). The first
    stop request while folding waits for the report (it is what the capture was for; the caller then
    exits 128 + N, `late_stop`); a second one, or one after the capture was already stopped by a signal,
    stops now and leaves the run directory complete for `pmuprof report`."""
    try:
        if rundir.read_run(out_dir).stopped_by in signal.Signals.__members__:
            return build(), 0
        with signals.first_noted(
            lambda name: log(f"{name}: finishing the report first (another one stops now)")
        ) as pending:
            result = build()
        return result, pending[0] if pending else 0
    except signals.STOPS as err:
        raise stopped(err, out_dir) from None
    except ResourceError as err:  # a full disk: what was recorded is whole, the report waits for space
        raise ResourceError(
            f"{err.message}; the run directory {out_dir} is complete", f"free space, then `pmuprof report {out_dir}`"
        ) from None


def late_stop(signum: int, what: str) -> Interrupted:
    """A stop signal that came while the report was being built: the report was finished first."""
    name = signal.Signals(signum).name
    return Interrupted(f"{name} came while the report was built: finished it first: {what}", "", 128 + signum)


def end_of_capture(run: Run, what: str, off_cpu_asked: bool = False) -> None:
    """A capture cut short still ends with an error status once its report (``what``) is written."""
    problem = capture_problem(run, what, off_cpu_asked)
    if problem is not None:
        raise problem


def capture_problem(run: Run, what: str, off_cpu_asked: bool = False) -> PmuprofError | None:
    """Why a capture whose report (``what``) was written still failed: 6 when the disk watcher stopped
    perf, 5 when perf was killed, 128 + N after signal N (130 for Ctrl-C), 8 when --off-cpu was asked
    for and the tracer recorded nothing; None when it did not."""
    if run.stopped_by == "disk":
        why = next((w for w in run.warnings if "keep the disk from filling" in w), "the disk was nearly full")
        return ResourceError(
            f"{why}; kept what was recorded: {what}", "free space, or capture with -o on a larger filesystem"
        )
    if run.stopped_by == "perf-killed":
        why = next((w for w in run.warnings if w.startswith("perf record was killed")), "perf record was killed")
        return PerfError(f"{why}: {what}", "check `dmesg` / `journalctl -k` for the OOM killer, then capture again")
    if run.stopped_by in signal.Signals.__members__:
        return Interrupted(
            f"capture stopped by {run.stopped_by} after {run.duration_s or 0:.1f} s; kept what was recorded: {what}",
            "",
            signals.exit_code(run.stopped_by),
        )
    if off_cpu_asked and run.offcpu is not None and not run.offcpu.recorded:
        return HelperError(
            f"--off-cpu: off-CPU stacks not recorded ({run.offcpu.why_not or 'no output'}); "
            f"the report is on-CPU only: {what}",
            "see offcpu.log in the run directory",
        )
    return None

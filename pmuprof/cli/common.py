"""Options and progress output shared by the capture commands."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..analysis.binaries import Lookup
from ..analysis.load import Choice
from ..capture.record import MAX_DURATION_S
from ..pipeline import Options
from .params import DURATION_HELP, Duration


def progress_printer(enabled: bool):
    """A progress callback writing one self-updating line to stderr (only on a terminal)."""
    tty = enabled and sys.stderr.isatty()

    def show(elapsed: float, duration: float, size: int) -> None:
        if tty:
            sys.stderr.write(f"\r  {elapsed:5.1f}/{duration:g} s, {duration - elapsed:5.1f} s left, "
                             f"perf.data {size / 2**20:6.1f} MiB ")
            sys.stderr.flush()
    return show if tty else None


def log(message: str) -> None:
    if sys.stderr.isatty():
        sys.stderr.write("\r\033[K")
    click.echo(f"pmuprof: {message}", err=True)


def capture_options(func):
    """-p/--all-mysqld/--duration/--frequency/--call-graph/--mode/--event/-o, shared by record and capture."""
    opts = [
        click.option("-p", "--pid", "pids", type=int, multiple=True, help="Target pid (repeat for several instances)."),
        click.option("--all-mysqld", is_flag=True, help="Profile every running mysqld / mariadbd."),
        click.option("-d", "--duration", type=Duration(0.1, MAX_DURATION_S), default="30s", show_default=True,
                     help=f"How long to record ({DURATION_HELP})."),
        click.option("-F", "--frequency", type=int, default=99, show_default=True, help="Samples per second per CPU."),
        click.option("--call-graph", type=click.Choice(["fp", "dwarf", "lbr"]), default="fp", show_default=True,
                     help="Stack walking: frame pointers, DWARF (32 KB stack copies), or Intel LBR."),
        click.option("--mode", type=click.Choice(["per-cpu", "per-thread"]), default="per-cpu", show_default=True,
                     help="per-cpu: perf record -a filtered to the targets (cheap); per-thread: perf record -p."),
        click.option("-e", "--event", default="cycles", show_default=True, help="Sampling event."),
        click.option("--per-thread-roots", is_flag=True, help="Add one root frame per thread in the flame graph."),
        click.option("--no-keep-perf-data", is_flag=True, help="Delete perf.data after folding (saves disk)."),
        click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False), default=None,
                     help="Run directory to create (default ./pmuprof-<comm>-<time>)."),
        click.option("-q", "--quiet", is_flag=True, help="No progress line."),
    ]
    for opt in reversed(opts):
        func = opt(func)
    return func


def input_options(func):
    """--pid/--comm (which processes of a system-wide input), --symfs/--binary (where the binaries are)."""
    opts = [
        click.option("--pid", "pids", type=int, multiple=True, help="Keep only these processes (system-wide inputs)."),
        click.option("--comm", "comms", multiple=True, help="Keep processes with a thread of this name."),
        click.option("--symfs", type=click.Path(exists=True, file_okay=False), default=None,
                     help="Look for binaries and debug files under this directory first (like perf --symfs)."),
        click.option("--binary", "binaries", type=click.Path(exists=True, dir_okay=False), multiple=True,
                     help="A binary that ran (matched by build-id; repeat for several)."),
    ]
    for opt in reversed(opts):
        func = opt(func)
    return func


def pipeline_options(pids=(), comms=(), symfs=None, binaries=(), per_thread: bool = False):
    """pipeline.Options from input_options' values."""
    return Options(Choice(tuple(pids), tuple(comms), per_thread),
                   Lookup(symfs=Path(symfs) if symfs else None, binaries=tuple(Path(b) for b in binaries)))


def say_findings(findings, top: int = 3, chains: bool = False) -> None:
    """The top causes on stderr, each with the findings it explains (as report.md groups them)."""
    causes = [f for f in findings if not f.explained_by]
    for finding in causes[:top]:
        chain = " ← ".join(finding.chain[:4]) if chains else ""
        log(f"  [{finding.severity}] {finding.title} ({finding.share:.0%})" + (f": {chain}" if chain else ""))
        explained = [f for f in findings if f.explained_by == finding.rule and f.process == finding.process]
        if explained:
            log("      explains: " + "; ".join(f"{f.title} ({f.share:.0%})" for f in explained))
    if len(causes) > top:
        log(f"  … and {len(causes) - top} more in the report")


def say_problems(profile) -> None:
    """Binary problems (missing, build-id mismatch, debuginfod) once on stderr, as the report shows them."""
    for line in profile.analysis.warnings:
        log(f"warning: {line}")

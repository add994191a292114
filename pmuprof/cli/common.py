"""Options and progress output shared by the capture commands."""

from __future__ import annotations

import sys

import click


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
        click.option("-d", "--duration", type=float, default=30.0, show_default=True, help="Seconds to record."),
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

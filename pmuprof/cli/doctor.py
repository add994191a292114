"""`pmuprof doctor`: one line per capability, with the fix for each missing one."""

from __future__ import annotations

from pathlib import Path

import click

from ..workflows.doctor import run_checks

EPILOG = """\b
Examples:
  pmuprof doctor                        # host checks + every running mysqld / mariadbd
  pmuprof doctor -p $(pidof mariadbd)   # symbols and frame pointers of this server
"""


@click.command("doctor", epilog=EPILOG)
@click.option("-p", "--pid", "pids", type=int, multiple=True, help="Check this target (repeatable).")
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False), default=".",
              help="Where captures will be written (free-disk check).")
def doctor_cmd(pids: tuple[int, ...], out_dir: str) -> None:
    """Check perf, permissions, the PMU, the native helper, symbols, frame pointers and disk."""
    for check in run_checks(pids, Path(out_dir)):
        mark = "ok  " if check.ok else "MISS"
        line = f"{mark} {check.name:<28} {check.detail}"
        click.echo(line + (f"\n     fix: {check.fix}" if check.fix else ""))


COMMAND = doctor_cmd

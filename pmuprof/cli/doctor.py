"""`pmuprof doctor`: one line per capability, with the fix for each missing one."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click

from ..workflows.doctor import EXIT_MISS, failing, run_checks
from ..workflows.doctor_check import SEVERITIES
from .mysqlopts import mysql_options, pop_mysql_options
from .params import flat_pids, pid_options

EPILOG = f"""\b
Examples:
  pmuprof doctor                        # host checks + every running mysqld / mariadbd
  pmuprof doctor -p $(pidof mariadbd)   # symbols, frame pointers and the MySQL connection of each server
  pmuprof doctor -p 1234 -S /run/mysqld/mysqld.sock   # is this socket pid 1234's server? (else: which one)
  pmuprof doctor --strict=error || alert   # fleet check: exit {EXIT_MISS} when a capture would fail
  pmuprof doctor --strict || alert      # ... or when a feature is off (a stripped server's symbols too)
  pmuprof doctor -u prof --defaults-file /etc/pmuprof/my.cnf   # the MySQL connection as capture makes it
  pmuprof doctor --json | jq -r '.checks[] | select(.ok | not) | .id'   # what is missing, by stable id
"""


@click.command("doctor", epilog=EPILOG)
@pid_options("Check this server (default: every mysqld / mariadbd running)")
@click.option(
    "-o",
    "--output",
    "out_dir",
    type=click.Path(file_okay=False),
    default=".",
    help="Where captures will be written (free-disk check).",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the checks as JSON ({ok, checks: [{id, name, ok, severity, detail, fix, pid}]}).",
)
@click.option(
    "--strict",
    type=click.Choice(SEVERITIES),
    is_flag=False,
    flag_value="warning",
    default=None,
    help=f"Exit {EXIT_MISS} when a check of this severity or worse is MISS: error (a capture would fail), "
    "warning (a feature is off; the default of a bare --strict), info (anything, a VM's missing PMU too).",
)
@mysql_options
def doctor_cmd(pids: tuple, more_pids: tuple, out_dir: str, as_json: bool, strict: str | None, **mysql) -> None:
    """Check perf, permissions, the PMU, each native program, disk, and per server symbols, frame pointers
    and the MySQL connection: one that reaches that very process (its socket's listener, or the server end
    of the TCP connection), else which server answered instead."""
    checks = run_checks(flat_pids(pids, more_pids), Path(out_dir), pop_mysql_options(mysql))
    if as_json:
        doc = {"ok": all(c.ok for c in checks), "checks": [asdict(c) for c in checks]}
        click.echo(json.dumps(doc, indent=2, sort_keys=True))
    else:
        for check in checks:
            mark = "ok  " if check.ok else "MISS"
            line = f"{mark} {check.name:<20} {check.detail}"
            click.echo(line + (f"\n     fix: {check.fix}" if check.fix else ""))
    if strict and failing(checks, strict):
        raise click.exceptions.Exit(EXIT_MISS)


COMMAND = doctor_cmd

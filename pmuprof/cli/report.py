"""`pmuprof report`: rebuild the report offline from a run directory, perf.data, perf script text or folded file."""

from __future__ import annotations

from pathlib import Path

import click

from ..pipeline import findings_json_text, report_input
from . import common

EPILOG = """\b
Examples:
  pmuprof report ./pmuprof-mariadbd-20261121-120000      # run directory → report.html in it
  pmuprof report perf.data -o out/                       # an existing perf record (mysqld/mariadbd kept)
  pmuprof report perf.data --pid 4242 -o out/            # choose the process in a system-wide recording
  perf script > s.txt; pmuprof report s.txt -o out/      # perf script text from another host
  pmuprof report stacks.folded --json | jq .findings     # findings only, for scripts
"""


@click.command("report", epilog=EPILOG)
@click.argument("input_path", metavar="INPUT", type=click.Path(exists=True))
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False), default=None,
              help="Output directory (default: INPUT itself for a run directory, else ./pmuprof-report).")
@click.option("--json", "as_json", is_flag=True, help="Print findings.json to stdout instead of writing files.")
@click.option("--pid", "pids", type=int, multiple=True, help="Keep only these processes (system-wide inputs).")
@click.option("--comm", "comms", multiple=True, help="Keep processes with a thread of this name.")
def report_cmd(input_path: str, out_dir: str | None, as_json: bool, pids: tuple, comms: tuple) -> None:
    """Write report.html, findings.json and report.md from a capture. Never needs the live server."""
    src = Path(input_path)
    if as_json:
        click.echo(findings_json_text(src, pids, comms), nl=False)
        return
    dest = Path(out_dir) if out_dir else (src if src.is_dir() else Path("pmuprof-report"))
    result = report_input(src, dest, pids, comms)
    common.log(f"report: {result['paths']['html']}")


COMMAND = report_cmd

"""`pmuprof history`: a self-contained HTML index of runs with trends and regression flags."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..workflows.history import latest_flags, render_index
from ..report.html import write_html
from . import common
from .params import InputPath

EPILOG = """\b
Examples:
  pmuprof history /var/lib/pmuprof                         # writes /var/lib/pmuprof/index.html
  pmuprof history pmuprof-watch -o /tmp/incident.html      # the captures of one watch session
  pmuprof history /var/lib/pmuprof --fail-on-regression    # exit 10 when the latest run regressed (monitoring)
"""


@click.command("history", epilog=EPILOG)
@click.argument(
    "directory", type=InputPath(fix="give the directory the runs are under (schedule --dir, watch -o)", file_okay=False)
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="HTML file to write (default DIRECTORY/index.html).",
)
@click.option("--title", default="", help="Page title (default: the directory name).")
@click.option("--fail-on-regression", is_flag=True, help="Exit 10 when the newest run carries a regression flag.")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print {count, runs, regressions, latest_regressed} as JSON instead of writing the page.",
)
def history_cmd(directory: str, output: str | None, title: str, fail_on_regression: bool, as_json: bool) -> None:
    """List the runs under DIRECTORY (nightly or watch captures) with trend charts across runs.

    Charts: the main findings and top functions in CPU time per sampled CPU, IPC when counted.
    A run is flagged when a finding or function uses more CPU time per second per sampled CPU
    than the median of the runs before it, beyond the sampling noise (95 %) and by at least 2
    points and a fifth; a new critical finding when its CPU time rose too; IPC down by more
    than 10 %. Improvements (the same tests, downwards) are listed and never fail the check.
    """
    base = Path(directory)
    out = Path(output) if output else base / "index.html"
    html, payload = render_index(base, out, title)
    flags = payload["regressions"]
    if as_json:
        doc = {key: payload[key] for key in ("count", "runs", "regressions", "latest")}
        click.echo(json.dumps({**doc, "latest_regressed": bool(latest_flags(payload))}, indent=2, sort_keys=True))
        if fail_on_regression and latest_flags(payload):
            raise click.exceptions.Exit(10)
        return
    write_html(out, html)
    common.log(f"history: {out}: {payload['count']} run(s), {len(flags)} regression flag(s)")
    for row in payload["runs"]:
        for note in (n for n in row["notes"] if "damaged" in n or "not read" in n):
            common.log(f"  warning: {row['name']}: {note}; left out of the trends")
    for flag in flags[-5:]:
        common.log(f"  {flag['run']}: {flag['text']}")
    better = [f for f in payload["improvements"] if f["run"] == (payload["runs"][0]["name"] if payload["runs"] else "")]
    for flag in better[:5]:
        common.log(f"  improved: {flag['run']}: {flag['text']}")
    if fail_on_regression and latest_flags(payload):
        raise click.exceptions.Exit(10)


COMMAND = history_cmd

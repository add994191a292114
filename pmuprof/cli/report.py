"""`pmuprof report`: rebuild the report offline from a run directory, perf.data, perf script text or folded file."""

from __future__ import annotations

from pathlib import Path

import click

from ..model import rundir
from ..pipeline import findings_json_text, report_input
from . import common
from .params import InputPath

EPILOG = """\b
Examples:
  pmuprof report ./pmuprof-mariadbd-20261121-120000      # run directory → report.html in it
  pmuprof report perf.data -o out/                       # an existing perf record (mysqld/mariadbd kept)
  pmuprof report perf.data --pid 4242 -o out/            # choose the process in a system-wide recording
  perf script > s.txt; pmuprof report s.txt -o out/      # perf script text from another host
  pmuprof report stacks.folded --json | jq .findings     # findings only, for scripts
  pmuprof report perf.data --symfs /mnt/dbhost -o out/   # binaries copied from the recording host
  pmuprof report perf.data --binary ./mariadbd -o out/   # the exact binary that ran (build-id checked)
  pmuprof report other.perf.data -o out/ --force         # replace out/'s report of another input
"""


@click.command("report", epilog=EPILOG)
@click.argument("input_path", metavar="INPUT", type=InputPath())
@click.option(
    "-o",
    "--output",
    "out_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Output directory (default: INPUT itself for a run directory, else ./pmuprof-report).",
)
@click.option("--json", "as_json", is_flag=True, help="Print findings.json to stdout instead of writing files.")
@click.option(
    "--force",
    is_flag=True,
    help="Write into an -o directory that holds other files or another input's report (only "
    "report.html, findings.json and report.md are replaced).",
)
@common.input_options
def report_cmd(input_path: str, out_dir: str | None, as_json: bool, force: bool, **inputs) -> None:
    """Write report.html, findings.json and report.md from a capture. Never needs the live server.

    Binaries are found by build-id as perf finds them (recorded path, --symfs, ~/.debug, separate
    debuginfo under /usr/lib/debug, debuginfod when DEBUGINFOD_URLS is set); the report says which
    could not be found or did not match.
    """
    src = Path(input_path)
    options = common.pipeline_options(**inputs)
    if as_json:
        click.echo(findings_json_text(src, options), nl=False)
        return
    dest = Path(out_dir) if out_dir else (src if src.is_dir() else Path("pmuprof-report"))
    rundir.claim_output_dir(dest, src, rundir.REPORT_FILES, force)
    result = report_input(src, dest, options)
    common.say_problems(result.profile, run_warnings=True)
    common.log(f"report: {result.paths['html']}")


COMMAND = report_cmd

"""`pmuprof diff`: what changed between two captures (differential flame graph + biggest changes)."""

from __future__ import annotations

from pathlib import Path

import click

from ..pipeline import profile_for_report
from ..model import rundir
from ..report.diff import DIFF_HTML, DIFF_JSON, DIFF_MD, diff_json, diff_profiles, write_diff
from . import common
from .params import InputPath

EPILOG = """\b
Examples:
  pmuprof diff run-before/ run-after/ -o diff/           # did the my.cnf change shrink ut_delay?
  pmuprof diff old.perf.data new.perf.data -o diff/      # two perf records of the same server
  pmuprof diff nightly-0601/ nightly-0602/ --json        # biggest changes as JSON, for scripts
  pmuprof diff a.folded b.folded --pid 4242 -o diff/     # keep one process of a system-wide input
"""


@click.command("diff", epilog=EPILOG)
@click.argument("before", type=InputPath())
@click.argument("after", type=InputPath())
@click.option(
    "-o",
    "--output",
    "out_dir",
    type=click.Path(file_okay=False),
    default="pmuprof-diff",
    show_default=True,
    help="Directory for diff.html, diff.json and diff.md.",
)
@click.option("--json", "as_json", is_flag=True, help="Print diff.json to stdout instead of writing files.")
@click.option(
    "--force",
    is_flag=True,
    help="Write into an -o directory that holds other files (only diff.html and diff.json are replaced).",
)
@common.input_options
def diff_cmd(before: str, after: str, out_dir: str, as_json: bool, force: bool, **inputs) -> None:
    """Compare BEFORE and AFTER (run directories, perf.data, perf script text or folded files).

    Each side is normalised by its own sample count, so captures of different length
    compare fairly. Red frames grew, blue shrank; the tables list the biggest changes in
    self and inclusive share, in percentage points, each with its 95 % interval (Newcombe's
    score interval for two shares) and whether it is outside the sampling noise. Small or
    unequal sample counts are warned about.
    """
    options = common.pipeline_options(**inputs)
    if not as_json:
        rundir.claim_output_dir(Path(out_dir), None, (DIFF_HTML, DIFF_JSON, DIFF_MD), force)
    sides = profile_for_report(before, options), profile_for_report(after, options)
    for side in sides:
        common.say_problems(side, run_warnings=True)  # what was left out of a run directory, and why
    result = diff_profiles(*sides)
    if as_json:
        click.echo(diff_json(result), nl=False)
        return
    paths = write_diff(result, Path(out_dir))
    click.echo(f"pmuprof: diff: {paths['diff.html']}", err=True)


COMMAND = diff_cmd

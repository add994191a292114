"""`pmuprof annotate`: one function's instructions with raw and skid-corrected sample counts."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..analysis.annotate import annotate, annotate_text, binary_for, override
from ..pipeline import build_profile
from ..tools.native import helper
from . import common
from .params import InputPath, Pids

EPILOG = """\b
Examples:
  pmuprof annotate ./pmuprof-run --symbol ut_delay              # where ut_delay's time really goes
  pmuprof annotate ./pmuprof-run --symbol os_rmb --json | jq .   # machine-readable, raw vs corrected
  pmuprof annotate perf.data --symbol srw_pause --binary /usr/sbin/mariadbd   # pick the binary yourself
  pmuprof annotate perf.data --comm spin --symbol pause_spin    # a perf.data of a non-MySQL program
"""


@click.command("annotate", epilog=EPILOG)
@click.argument("input_path", metavar="INPUT", type=InputPath())
@click.option("--symbol", required=True, help="Function name as the report or perf shows it.")
@click.option(
    "--binary",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="The profiled executable or library (default: the dso named by the samples, or the run's target).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the listing as JSON.")
@click.option(
    "--pid",
    "pids",
    type=Pids(),
    multiple=True,
    help="Keep only these processes (perf.data inputs); several as --pid 1,2 or --pid 1 --pid 2.",
)
@click.option("--comm", "comms", multiple=True, help="Keep processes with a thread of this name (perf.data inputs).")
@click.option(
    "--symfs",
    type=click.Path(exists=True, file_okay=False),
    default=None,
    help="Look for binaries and debug files under this directory first (like perf --symfs).",
)
def annotate_cmd(
    input_path: str, symbol: str, binary: str | None, as_json: bool, pids: tuple, comms: tuple, symfs: str | None
) -> None:
    """Show SYMBOL's instructions with raw and skid-corrected sample counts.

    Interrupt sampling (and PEBS/IBS) charges the cycles of PAUSE, fences and locked
    instructions to the instruction after them; the corrected column moves those samples
    back. Samples move, none vanish: raw and corrected totals are equal.
    """
    options = common.pipeline_options(pids, comms, symfs)
    profile = build_profile(input_path, options)
    found = override(Path(binary), profile) if binary else binary_for(profile, symbol, options.lookup)
    model = annotate(profile, symbol, found, helper.skid)
    if as_json:
        click.echo(json.dumps(model, indent=2, sort_keys=True))
    else:
        click.echo(annotate_text(model), nl=False)


COMMAND = annotate_cmd

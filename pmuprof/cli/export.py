"""`pmuprof export`: write a capture as folded stacks, pprof or speedscope for other tools and fleets."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import click

from ..analysis.addresses import load_biases
from ..analysis.load import sniff
from ..analysis.threads import split_by_thread
from ..errors import InputError
from ..model import rundir
from ..pipeline import build_profile, with_choice
from ..report.export import FORMATS, export_bytes, export_profile
from . import common
from .params import InputPath

EPILOG = """\b
Examples:
  pmuprof export run/ --format pprof -o mysqld.pb.gz     # then: pprof -top mysqld.pb.gz
  pmuprof export run/ --format speedscope -o prof.json   # open in speedscope (offline app works too)
  pmuprof export perf.data --format folded -o out.folded # flamegraph.pl / difffolded.pl / inferno / Pyroscope input
  pmuprof export run/ -f folded -o - | curl --data-binary @- "$PYROSCOPE/ingest?name=mysqld&format=folded"  # push to Pyroscope
  pmuprof export perf.data -f folded --headers -o a.folded  # keep the context lines, for pmuprof report/diff later
"""


@click.command("export", epilog=EPILOG)
@click.argument("input_path", metavar="INPUT", type=InputPath())
@click.option(
    "-f",
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    required=True,  # the registry as imported
    help="; ".join(f"{name}: {f.about}" for name, f in FORMATS.items()) + ".",
)
@click.option(
    "-o",
    "--output",
    "out_file",
    type=click.Path(dir_okay=False, allow_dash=True),
    required=True,
    help="File to write ('-' for stdout).",
)
@click.option(
    "--headers/--no-headers",
    default=False,
    help="folded: begin with pmuprof's '# key: value' context lines (event, frequency, samples), which "
    "pmuprof reads back but difffolded.pl and inferno warn about. Default: stack lines only.",
)
@click.option(
    "--per-thread/--per-process",
    default=None,
    help="A thread frame under each process (speedscope: one profile per thread). Default: per thread "
    "for speedscope when the input has thread ids (perf.data, perf script, a run directory's "
    "samples.tsv), else per process.",
)
@common.input_options
def export_cmd(input_path: str, fmt: str, out_file: str, headers: bool, per_thread: bool | None, **inputs) -> None:
    """Export INPUT (run directory, perf.data, perf script text or folded file) in another format.

    The same input always gives the same bytes. pprof and speedscope carry CPU time (samples x 1e9/F ns)
    when the sampling frequency is known; pprof has one mapping per binary with its build-id. See
    docs/export.md for pushing folded output to Grafana Pyroscope.
    """
    notes: list[str] = []
    source, threads = _with_threads(Path(input_path), notes)
    per_thread = (FORMATS[fmt].threads and threads) if per_thread is None else per_thread
    if per_thread and not threads:
        raise InputError(
            f"{input_path}: no thread ids in this input (folded stacks)", "export a perf.data or perf script"
        )
    options = common.pipeline_options(**inputs)
    if per_thread and source.is_dir():  # a run directory without perf.data: its sample table has the threads
        profile = build_profile(source, options)
        split = split_by_thread(profile)
        if split is None:  # its sample table said it has them
            raise InputError(f"{input_path}: no thread ids in this input", "export a perf.data or perf script")
        profile = replace(profile, stacks=split, samples=None)
    else:
        profile = build_profile(
            source if per_thread else input_path, with_choice(options, per_thread=True) if per_thread else options
        )
    common.say_problems(profile, run_warnings=True, more=notes)  # what was left out of a run directory, and why
    if not profile.total:
        raise InputError(f"{input_path}: the profile is empty", "record while the server is busy")
    biases = (
        load_biases(profile.analysis.binaries, [m for t in profile.run.targets for m in t.maps])
        if FORMATS[fmt].biases
        else {}
    )
    if out_file == "-":
        sys.stdout.buffer.write(export_bytes(profile, fmt, headers, biases, per_thread))
        sys.stdout.buffer.flush()
        return
    path = export_profile(profile, fmt, Path(out_file), headers, biases, per_thread)
    click.echo(f"pmuprof: export: {path} ({fmt}, {profile.total} samples)", err=True)


def _with_threads(path: Path, notes: list[str]) -> tuple[Path, bool]:
    """The input that carries thread ids (a run directory's perf.data), and whether there is one; a file of a
    run directory that is not read (a link, another user's file) is noted in ``notes``."""
    if path.is_dir() and rundir.is_run_dir(path):
        rundir.check_received(path)
    if path.is_dir() and rundir.readable(path / rundir.PERF_DATA, notes):
        return path / rundir.PERF_DATA, True
    if path.is_dir() and rundir.readable(path / rundir.SAMPLES, notes):
        table, _ = rundir.read_samples(path / rundir.SAMPLES, None)
        return path, table is not None and table.has_tids
    kind = sniff(path) if path.exists() else ""
    return path, kind in ("perf.data", "perf-script")


COMMAND = export_cmd

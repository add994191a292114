"""`pmuprof export`: write a capture as folded stacks, pprof or speedscope for other tools and fleets."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..errors import InputError
from ..pipeline import build_profile
from ..report.export import export_bytes, export_profile
from . import common

EPILOG = """\b
Examples:
  pmuprof export run/ --format pprof -o mysqld.pb.gz     # then: pprof -top mysqld.pb.gz
  pmuprof export run/ --format speedscope -o prof.json   # open in speedscope (offline app works too)
  pmuprof export perf.data --format folded -o out.folded # flamegraph.pl / inferno / Pyroscope input
  pmuprof export run/ -f folded --no-headers -o - | curl --data-binary @- "$PYROSCOPE/ingest?name=mysqld&format=folded"  # push to Pyroscope
"""


@click.command("export", epilog=EPILOG)
@click.argument("input_path", metavar="INPUT", type=click.Path(exists=True))
@click.option("-f", "--format", "fmt", type=click.Choice(["folded", "pprof", "speedscope"]), required=True,
              help="folded: FlameGraph text with # headers; pprof: gzipped profile.proto; speedscope: its JSON.")
@click.option("-o", "--output", "out_file", type=click.Path(dir_okay=False, allow_dash=True), required=True,
              help="File to write ('-' for stdout).")
@click.option("--no-headers", is_flag=True, help="folded: stack lines only, no '# key: value' context lines.")
@common.input_options
def export_cmd(input_path: str, fmt: str, out_file: str, no_headers: bool, **inputs) -> None:
    """Export INPUT (run directory, perf.data, perf script text or folded file) in another format.

    The same input always gives the same bytes. See docs/export.md for pushing folded
    output to Grafana Pyroscope.
    """
    profile = build_profile(input_path, common.pipeline_options(**inputs))
    if not profile.total:
        raise InputError(f"{input_path}: the profile is empty", "record while the server is busy")
    if out_file == "-":
        sys.stdout.buffer.write(export_bytes(profile, fmt, not no_headers))
        sys.stdout.buffer.flush()
        return
    path = export_profile(profile, fmt, Path(out_file), not no_headers)
    click.echo(f"pmuprof: export: {path} ({fmt}, {profile.total} samples)", err=True)


COMMAND = export_cmd

"""`pmuprof schedule install|remove|status|prune`: nightly captures with retention and a history index."""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

import click

from ..capture.record import MAX_DURATION_S
from ..workflows import schedule_io
from ..workflows.schedule import ScheduleSpec
from ..workflows.schedule_units import fixed_offset
from ..workflows.triggers import parse_size
from . import common
from .fleetopts import fleet_options
from .mysqlopts import mysql_options, pop_mysql_argv
from .params import DURATION_HELP, Duration, flat_pids, pid_options

EPILOG = """\b
Examples:
  pmuprof schedule install --at 03:00 --all-mysqld --dry-run                # print the units, change nothing
  pmuprof schedule install --all-mysqld --scheduler systemd --dry-run       # the systemd units even on a cron host
  pmuprof schedule install --all-mysqld --scheduler systemd --root pkg/     # into a package being built
  pmuprof schedule install --at 03:00 --all-mysqld -d 60 --keep-days 14     # nightly 60 s capture, 2 weeks kept
  pmuprof schedule install --all-mysqld --call-graph dwarf -F 49 --off-cpu  # capture options pass through
  pmuprof schedule install --at 02:30 --all-mysqld --keep-size 5G --defaults-file /etc/pmuprof/my.cnf
  pmuprof schedule install --all-mysqld --textfile /var/lib/prometheus/node-exporter/pmuprof.prom   # fleet metrics
  pmuprof schedule install --all-mysqld --notify-cmd '/usr/local/bin/ticket --queue dba'          # verdict + report path
  pmuprof schedule status                                                   # next run, last exit status
  pmuprof schedule prune --dir /var/lib/pmuprof --keep-days 7 --dry-run     # what retention would delete
  pmuprof schedule remove                                                   # disable the timer, delete its files
"""


@click.group("schedule", epilog=EPILOG)
def schedule_cmd() -> None:
    """Nightly captures: a systemd timer + service (or a cron line without systemd).

    Each run captures into DIR/<YYYYmmdd-HHMMSS>/, exits 0 / 10 / 20 for no / warning / critical
    findings (the unit fails on critical so failed-unit monitoring alerts), then prunes old runs
    and rewrites DIR/index.html (pmuprof history).
    """


SCHEDULER = click.option(
    "--scheduler",
    type=click.Choice(["auto", "systemd", "cron"]),
    default="auto",
    show_default=True,
    help="auto: systemd when it runs as PID 1, else cron.",
)


def _scheduler(choice: str) -> bool:
    """True for systemd. Without systemd as PID 1, auto falls back to cron."""
    return choice == "systemd" or (choice == "auto" and schedule_io.systemd_running())


def self_launcher() -> tuple[tuple[str, ...], str]:
    """The argv that runs this very pmuprof, and the PYTHONPATH it needs: the console script that is
    running (symlinks resolved: pipx's ~/.local/bin link points into its venv), else, under
    `python -m pmuprof`, this interpreter with this package's directory on its path. Never the first
    `pmuprof` on PATH, which may be another install (a pyenv shim, an old pip install)."""
    argv0 = sys.argv[0] if sys.argv and sys.argv[0] else ""
    name = os.path.basename(argv0)
    if name.startswith("pmuprof") and not name.endswith(".py") and os.path.isfile(argv0) and os.access(argv0, os.X_OK):
        return (os.path.realpath(argv0),), ""
    package_parent = str(Path(__file__).resolve().parent.parent.parent)
    return (os.path.abspath(sys.executable), "-m", "pmuprof"), package_parent


@schedule_cmd.command("install", epilog=EPILOG)
@click.option("--at", "at", default="03:00", show_default=True, help="Local time of day, HH:MM.")
@pid_options("Target pid (changes on restart: prefer --all-mysqld)")
@click.option("--all-mysqld", is_flag=True, help="Profile every mysqld / mariadbd running at that time.")
@click.option(
    "-d",
    "--duration",
    type=Duration(1, MAX_DURATION_S),
    default="60s",
    show_default=True,
    help=f"Capture length ({DURATION_HELP}).",
)
@click.option("--dir", "directory", default="/var/lib/pmuprof", show_default=True, help="Where dated runs go.")
@click.option("--keep-days", type=click.IntRange(1), default=14, show_default=True, help="Delete runs older.")
@click.option("--keep-size", default="5G", show_default=True, help="Delete the oldest runs beyond this total.")
@click.option(
    "--randomized-delay",
    type=Duration(0, 12 * 3600),
    default="10m",
    show_default=True,
    help="Spread a fleet: each host starts up to this late, the same offset every night.",
)
@click.option(
    "--cpu-quota",
    type=click.IntRange(1, 100000),
    default=100,
    show_default=True,
    help="systemd CPUQuota in % of one core for the whole run.",
)
@click.option("--memory-max", default="2G", show_default=True, help="systemd MemoryMax for the whole run.")
@click.option(
    "-F",
    "--frequency",
    type=click.IntRange(1, 100000),
    default=None,
    help="Each capture's samples per second per CPU (capture's default: 99).",
)
@click.option(
    "--call-graph",
    type=click.Choice(common.CALL_GRAPHS),
    default=None,
    help="Each capture's stack walking (capture's default: fp).",
)
@click.option("--mode", type=click.Choice(common.MODES), default=None, help="Each capture's sampling mode.")
@click.option(
    "--off-cpu/--no-off-cpu", default=None, help="Each capture's off-CPU stacks (capture's default: on where cheap)."
)
@mysql_options
@fleet_options
@SCHEDULER
@click.option("--exe", default=None, help="pmuprof executable the timer runs (default: the one running this command).")
@click.option("--dry-run", is_flag=True, help="Print what would be written; change nothing.")
@click.option(
    "--root",
    type=click.Path(file_okay=False),
    default=None,
    help="Write the files under this directory (a package or an image being built) and enable nothing.",
)
def install_cmd(
    at,
    pids,
    more_pids,
    all_mysqld,
    duration,
    directory,
    keep_days,
    keep_size,
    randomized_delay,
    cpu_quota,
    memory_max,
    frequency,
    call_graph,
    mode,
    off_cpu,
    scheduler,
    exe,
    dry_run,
    root,
    **kwargs,
) -> None:
    """Write and enable the nightly timer."""
    launcher, pythonpath = ((os.path.abspath(exe),), "") if exe else self_launcher()
    textfile, notify = kwargs.pop("textfile"), kwargs.pop("notify_cmd")
    kwargs.pop("notify_timeout")
    spec = ScheduleSpec(
        at=at,
        directory=os.path.abspath(directory),
        duration_s=int(round(duration)),
        exe=launcher,
        pids=flat_pids(pids, more_pids),
        all_mysqld=all_mysqld,
        keep_days=keep_days,
        keep_bytes=parse_size(keep_size),
        capture_args=_capture_argv(frequency, call_graph, mode, off_cpu) + pop_mysql_argv(kwargs) + ("-q",),
        pythonpath=pythonpath,
        randomized_delay_s=int(randomized_delay),
        cpu_quota_pct=cpu_quota,
        memory_max=parse_size(memory_max),
        textfile=textfile and os.path.abspath(textfile),
        notify_cmd=notify,
    )
    systemd = _scheduler(scheduler)
    offset = fixed_offset(socket.gethostname(), spec.randomized_delay_s)
    if dry_run:
        for name, text in schedule_io.rendered(spec, systemd, cron_offset_s=offset).items():
            click.echo(f"# ---- {name}\n{text}")
        return
    for line in schedule_io.install(spec, systemd, Path(root or "/"), cron_offset_s=offset):
        common.log(line)
    common.log(f"nightly capture at {at} into {spec.directory} ({'systemd timer' if systemd else 'cron'})")


def _capture_argv(
    frequency: int | None, call_graph: str | None, mode: str | None, off_cpu: bool | None
) -> tuple[str, ...]:
    """The capture options given to `schedule install`, spelled again for the unit or cron line."""
    argv: list[str] = []
    for flag, value in (("-F", frequency), ("--call-graph", call_graph), ("--mode", mode)):
        if value is not None:
            argv += [flag, str(value)]
    if off_cpu is not None:
        argv.append("--off-cpu" if off_cpu else "--no-off-cpu")
    return tuple(argv)


@schedule_cmd.command("remove")
@SCHEDULER
def remove_cmd(scheduler: str) -> None:
    """Disable the timer and delete the unit / cron files pmuprof wrote (runs are kept)."""
    for line in schedule_io.remove(_scheduler(scheduler)):
        common.log(line)


@schedule_cmd.command("status")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@SCHEDULER
def status_cmd(as_json: bool, scheduler: str) -> None:
    """What is installed, next and last run, the last exit status, the newest run directory."""
    info = schedule_io.status(_scheduler(scheduler))
    if as_json:
        click.echo(json.dumps(info, indent=2, sort_keys=True))
        return
    if not info["installed"]:
        click.echo("no nightly capture installed (pmuprof schedule install --help)")
        return
    spec = info["spec"]
    click.echo(f"nightly capture at {spec['at']} via {info['scheduler']} into {spec['directory']}")
    for key in ("NextElapseUSecRealtime", "LastTriggerUSec", "Result", "ExecMainStatus"):
        if key in info:
            click.echo(f"  {key}: {info[key]}")
    click.echo(f"  runs kept: {info.get('runs', 0)}, newest: {info.get('latest') or '-'}")


@schedule_cmd.command("prune")
@click.option("--dir", "directory", required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--keep-days", type=click.IntRange(1), default=None, help="Delete runs older than this.")
@click.option("--keep-size", default=None, help="Delete the oldest runs beyond this total (5G, 500M).")
@click.option("--dry-run", is_flag=True, help="List what would be deleted.")
def prune_cmd(directory: str, keep_days: int | None, keep_size: str | None, dry_run: bool) -> None:
    """Retention: delete old pmuprof runs. Only directories with pmuprof's run.json are touched, only
    the files pmuprof writes are deleted, and the newest run is always kept."""
    keep_bytes = parse_size(keep_size) if keep_size else None
    for deletion, kept in schedule_io.prune(Path(directory), keep_days, keep_bytes, dry_run):
        verb = "would delete" if dry_run else "deleted"
        extra = f" (kept foreign files: {', '.join(kept)})" if kept else ""
        common.log(f"{verb} {deletion.name}: {deletion.reason}, {deletion.size // 2**20} MiB{extra}")


COMMAND = schedule_cmd

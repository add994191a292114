"""`pmuprof watch --print-unit`: the watch options given, spelled again as a hardened systemd service."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from .. import outfile
from ..workflows.schedule_units import STATE_ROOT
from ..workflows.triggers import WatchPlan
from ..workflows.watch import Retention
from ..workflows.watch_unit import DEFAULT_DIR, UNIT_NAME, WatchService, watch_unit
from . import common
from .schedule import self_launcher


def unit_argv(
    plan: WatchPlan,
    triggers: tuple[str, ...],
    interval_s: float,
    duration_s: float,
    disk_free: tuple[str, ...],
    frequency: int,
    mode: str,
    off_cpu: bool | None,
    directory: str,
    verbose: bool,
    keep: Retention,
    mysql: tuple[str, ...],
    textfile: str | None,
    notify_timeout: float | None,
) -> list[str]:
    """The `watch` arguments of the service: every option as parsed, paths absolute (systemd runs it in /)."""
    argv = [arg for t in triggers for arg in ("-t", t)]
    argv += [
        "--cycles",
        str(plan.cycles),
        "--interval",
        _secs(interval_s),
        "-d",
        _secs(duration_s),
        "--cooldown",
        _secs(plan.cooldown_s),
    ]
    argv += ["--max-captures", str(plan.max_captures)] if plan.max_captures is not None else []
    argv += [arg for floor in disk_free for arg in ("--disk-free", floor)]
    argv += ["-F", str(frequency), "--mode", mode, "-o", directory] + (["-v"] if verbose else [])
    argv += [] if off_cpu is None else ["--off-cpu" if off_cpu else "--no-off-cpu"]
    if keep.off:
        argv.append("--no-retention")
    else:
        argv += ["--keep", str(keep.count), "--keep-for", _secs(keep.age_s or 0), "--keep-size", str(keep.bytes)]
    argv += list(mysql)
    argv += ["--textfile", os.path.abspath(textfile)] if textfile else []
    argv += ["--notify-timeout", _secs(notify_timeout)] if notify_timeout is not None else []
    return argv


def _secs(seconds: float) -> str:
    """Seconds as the Duration option reads them back: ``2592000``, ``0.5`` (never ``2.592e+06``)."""
    return str(int(seconds)) if seconds == int(seconds) else repr(seconds)


def print_unit(plan: WatchPlan, base_dir: str, textfile: str | None, notify_cmd: str | None, **kw: Any) -> None:
    """Print the unit; a directory outside /var/lib is created now (the sandbox only writes existing paths)."""
    given = click.get_current_context().get_parameter_source("base_dir") != click.core.ParameterSource.DEFAULT
    directory = os.path.abspath(base_dir) if given else DEFAULT_DIR
    launcher, pythonpath = self_launcher()
    svc = WatchService(
        launcher,
        tuple(unit_argv(plan, directory=directory, textfile=textfile, **kw)),
        directory,
        pythonpath=pythonpath,
        textfile=textfile and os.path.abspath(textfile),
        notify_cmd=notify_cmd,
    )
    if not directory.startswith(STATE_ROOT):
        outfile.ensure_dir(Path(directory))
        common.log(f"created {directory} (ReadWritePaths= needs it to exist)")
    click.echo(watch_unit(svc), nl=False)
    common.log(
        f"save as /etc/systemd/system/{UNIT_NAME}.service, then: systemctl daemon-reload && "
        f"systemctl enable --now {UNIT_NAME}"
    )

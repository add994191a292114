"""The --textfile / --notify-cmd options of commands that run unattended (capture, watch, scheduled runs)."""

from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from collections.abc import Callable, Iterator

import click

from ..errors import PmuprofError
from ..workflows.fleet import Notify, Outcome, Publish, publish
from . import common
from .params import Duration

_KEYS = ("textfile", "notify_cmd", "notify_timeout")


def fleet_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add --textfile (env PMUPROF_TEXTFILE), --notify-cmd (env PMUPROF_NOTIFY_CMD) and --notify-timeout."""
    opts = [
        click.option(
            "--textfile",
            envvar="PMUPROF_TEXTFILE",
            type=click.Path(dir_okay=False),
            default=None,
            help="After each run, write Prometheus metrics to this *.prom file (atomically), for "
            "node_exporter's textfile collector. Env: PMUPROF_TEXTFILE.",
        ),
        click.option(
            "--notify-cmd",
            envvar="PMUPROF_NOTIFY_CMD",
            metavar="CMD",
            default=None,
            help="After each run, run CMD (split like a shell word list, run without a shell) with the "
            "one-line verdict and the report path appended. Env: PMUPROF_NOTIFY_CMD.",
        ),
        click.option(
            "--notify-timeout",
            type=Duration(1, 3600),
            default="30s",
            show_default=True,
            help="Kill the notify command after this long.",
        ),
    ]
    for opt in reversed(opts):
        func = opt(func)
    return func


def pop_publish(kwargs: dict[str, Any]) -> Publish:
    """Remove the fleet options from a command's kwargs; checked now, before anything is captured."""
    values = {key: kwargs.pop(key, None) for key in _KEYS}
    notify = Notify.parse(values["notify_cmd"], values["notify_timeout"] or 30.0) if values["notify_cmd"] else None
    target = Publish(Path(values["textfile"]) if values["textfile"] else None, notify)
    target.check()
    return target


@contextmanager
def published_on_error(target: Publish, run_dir: Callable[[], Path | None] = lambda: None) -> Iterator[None]:
    """A run that ends in an error still updates the textfile (its exit code) and notifies."""
    try:
        yield
    except PmuprofError as err:
        if target.textfile or target.notify:
            publish(target, Outcome(err.exit_code, run_dir(), error=str(err), ended=time.time()), common.log)
        raise

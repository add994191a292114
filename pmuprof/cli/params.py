"""Click parameter types shared by every command (one duration syntax everywhere)."""

from __future__ import annotations

import os
from typing import Any

import click

from ..errors import InputError, UsageError
from ..workflows.triggers import parse_duration

DURATION_HELP = "30, 30s, 500ms, 5m or 1h"
SEVERAL = "-p 1,2,3, -p $(pidof mariadbd), -p 1 -p 2, or --all-mysqld for every mysqld / mariadbd"


class Duration(click.ParamType):
    """A duration in seconds: ``30`` (seconds), ``30s``, ``500ms``, ``5m``, ``1h``; bounds inclusive."""

    name = "duration"

    def __init__(self, min_s: float | None = None, max_s: float | None = None) -> None:
        self.min_s, self.max_s = min_s, max_s

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "DURATION"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        """Seconds; a bad value is one line (pmuprof's UsageError, exit 2), not click's usage screen."""
        option = _option_name(param)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            seconds = float(value)
        else:
            try:
                seconds = parse_duration(str(value))
            except UsageError as err:
                raise UsageError(f"{option}: {err.message}", DURATION_HELP) from err
        low, high = self.min_s, self.max_s
        if (low is not None and seconds < low) or (high is not None and seconds > high):
            span = (
                f"use {_human(low or 0)} to {_human(high)}" if high is not None else f"use at least {_human(low or 0)}"
            )
            raise UsageError(f"{option} {value} is out of range", span)
        return seconds


class Pid(click.ParamType):
    """A process id. A bad value is one line that does not repeat it: ``-pSECRET`` is the mysql client's
    password habit, and the error goes to terminals, cron mail and the journal."""

    name = "pid"

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "PID"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        text = str(value).strip()
        if text.isascii() and text.isdigit() and 0 < int(text) < 2**31:
            return int(text)
        raise UsageError(
            f"{_option_name(param)} takes a process id; the value given is not one (not shown: it may be a password)",
            "-p is the pid here, not the password: use --mysql-password-env VAR or an option file for that",
        )


class InputPath(click.Path):
    """An input that must exist: a missing one is a bad input (InputError, exit 3, one line), as the
    the exit-code table (docs/usage.md) says, not click's usage screen (exit 2)."""

    PROFILE = "give a run directory, perf.data, perf script text or a folded file"

    def __init__(self, fix: str = PROFILE, **kwargs: Any) -> None:
        super().__init__(exists=True, **kwargs)
        self.fix = fix

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not os.path.lexists(os.fsdecode(value)):
            name = param.human_readable_name if param is not None else "input"
            raise InputError(f"{name} {os.fsdecode(value)}: no such file or directory", self.fix)
        return super().convert(value, param, ctx)


class Pids(click.ParamType):
    """One or more process ids in perf's syntax, ``1234`` or ``1,2,3`` (a tuple); a bad token is not repeated,
    for the reason ``Pid`` gives."""

    name = "pids"

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "PID[,PID...]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[int, ...]:
        if isinstance(value, tuple):
            return value
        tokens = [t for t in str(value).split(",") if t.strip()] or [""]
        try:
            return tuple(Pid().convert(t, param, ctx) for t in tokens)
        except UsageError as err:
            raise UsageError(err.message, f"{err.fix}; several servers: {SEVERAL}") from None


class ExtraPids(click.ParamType):
    """The words after ``-p 1`` when a shell expanded ``-p $(pidof mariadbd)`` on a host with several servers:
    more targets when they are pids, else one line naming the ways to give several (the word not shown)."""

    name = "extra_pids"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[int, ...]:
        try:
            return Pids().convert(value, param, ctx)
        except UsageError:
            raise UsageError(
                "unexpected argument (not shown: it may be a password); this command takes no "
                "positional arguments but pids",
                f"several servers: {SEVERAL}",
            ) from None


def pid_options(what: str):
    """``-p/--pid`` (repeatable, perf's comma list) and the extra words a shell makes of ``-p $(pidof mariadbd)``:
    the one target grammar of every command that takes live processes. The command gets ``pids`` and
    ``more_pids``; ``flat_pids(pids, more_pids)`` joins them in order, each pid once."""

    def decorate(func):
        func = click.argument("more_pids", nargs=-1, type=ExtraPids(), metavar="")(func)
        return click.option(
            "-p",
            "--pid",
            "pids",
            type=Pids(),
            multiple=True,
            help=f"{what}; several as -p 1,2 (perf's syntax), -p $(pidof mariadbd) or -p 1 -p 2.",
        )(func)

    return decorate


def flat_pids(*groups) -> tuple[int, ...]:
    """Pids from ``-p`` values (ints or tuples of them) and extra words, in order, each once."""
    out: list[int] = []
    for group in groups:
        for item in group:
            for pid in item if isinstance(item, tuple) else (item,):
                if pid not in out:
                    out.append(pid)
    return tuple(out)


def _option_name(param: click.Parameter | None) -> str:
    opts = list(getattr(param, "opts", ()) or ())
    return next((o for o in opts if o.startswith("--")), opts[0] if opts else "duration")


def _human(seconds: float) -> str:
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"

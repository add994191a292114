"""`pmuprof watch`: triggered capture during an incident (pt-stalk's model with perf stacks)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any
from collections.abc import Callable

import click

from .. import outfile
from ..capture.record import MAX_DURATION_S, check_window
from ..capture.proc import process as target
from ..workflows import daemon
from ..workflows.watch import Retention, WatchOptions, watch
from ..errors import TargetError, UsageError
from ..workflows.triggers import DiskFloor, WatchPlan, parse_condition, parse_size
from . import common
from .fleetopts import fleet_options, pop_publish
from .mysqlopts import pop_mysql_argv
from .params import DURATION_HELP, Duration, flat_pids, pid_options
from .record import mysql_decorator, mysql_from_kwargs
from . import watchunit

EPILOG = """\b
Examples:
  pmuprof watch -p $(pidof mariadbd) --trigger 'Threads_running>50' --cycles 3   # 1-second spikes pt-stalk style
  pmuprof watch -p 1234,5678 -t 'Threads_running>50'   # each server on its own; the first to hold captures both
  pmuprof watch --trigger 'state:statistics>=10' -d 10 -o /var/tmp/stalk        # threads stuck in range estimation
  pmuprof watch --trigger 'cpu>400' --trigger 'Threads_running>64' -v            # either condition; show every poll
  pmuprof watch --trigger 'Threads_running>50' --max-captures 3 --cooldown 5m    # at most 3 captures, 5 min apart
  pmuprof watch --trigger 'Threads_running>50' --disk-free 2G --disk-free 10%    # never fill the disk
  pmuprof watch -t 'Threads_running>50' --daemonize --pid-file /run/pmuprof-watch.pid --log-file /var/log/pmuprof-watch.log   # unattended
  pmuprof watch -t 'Threads_running>50' --notify-cmd '/usr/local/bin/page-dba'  # verdict + report path per capture
  pmuprof watch -t 'Threads_running>50' --keep 50 --keep-for 7d --keep-size 5G  # retention of the captures
  pmuprof watch -t 'Threads_running>50' --defaults-file /etc/pmuprof/my.cnf --print-unit   # as a systemd service
"""


@click.command("watch", epilog=EPILOG)
@pid_options("Server(s) to watch (default: the only mysqld / mariadbd running)")
@click.option(
    "-t",
    "--trigger",
    "triggers",
    multiple=True,
    required=True,
    metavar="COND",
    help="Status variable, state:NAME, command:NAME or cpu, an operator and a number; repeat for OR.",
)
@click.option(
    "--cycles", type=click.IntRange(1), default=5, show_default=True, help="Consecutive polls the condition must hold."
)
@click.option(
    "--interval",
    type=Duration(0.1, 3600),
    default="1s",
    show_default=True,
    help=f"Time between polls ({DURATION_HELP}).",
)
@click.option(
    "-d",
    "--duration",
    "--run-time",
    "duration",
    type=Duration(0.1, 3600),
    default="30s",
    show_default=True,
    help="Length of each capture.",
)
@click.option(
    "--cooldown",
    type=Duration(0, 7 * 86400),
    default="5m",
    show_default=True,
    help="Pause after a capture before watching again.",
)
@click.option(
    "--max-captures",
    type=click.IntRange(1),
    default=None,
    help="Stop after this many (default: unlimited, like pt-stalk's --iterations; --disk-free still holds).",
)
@click.option(
    "--disk-free",
    "disk_free",
    multiple=True,
    default=("100M", "5%"),
    show_default=True,
    help="Free-space floor checked before each capture: a size (1G) or a percent (5%); repeatable.",
)
@click.option("-F", "--frequency", type=int, default=99, show_default=True, help="Samples per second per CPU.")
@click.option(
    "--mode",
    type=click.Choice(["per-cpu", "per-thread"]),
    default="per-cpu",
    show_default=True,
    help="perf sampling mode of each capture (see pmuprof record).",
)
@click.option(
    "--off-cpu/--no-off-cpu",
    default=None,
    help="Each capture's off-CPU stacks, as for capture (default: on where cheap: CAP_BPF, kernel 6.16+).",
)
@click.option(
    "-o",
    "--output",
    "base_dir",
    type=click.Path(file_okay=False),
    default="pmuprof-watch",
    show_default=True,
    help="Base directory; each capture goes to BASE/<time>-<trigger>/.",
)
@click.option("-v", "--verbose", is_flag=True, help="One status line per poll.")
@click.option("--daemonize", is_flag=True, help="Detach and keep watching in the background (needs --log-file).")
@click.option(
    "--pid-file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Hold this locked pid file while running; refuse to start when a live watch holds it.",
)
@click.option(
    "--log-file",
    type=click.Path(dir_okay=False),
    default=None,
    help="With --daemonize: append the log here (time-stamped lines).",
)
@click.option(
    "--keep",
    "keep_count",
    type=click.IntRange(1),
    default=20,
    show_default=True,
    help="Retention: delete watch's oldest captures in the base directory beyond this many.",
)
@click.option(
    "--keep-for",
    type=Duration(60, 3650 * 86400),
    default="30d",
    show_default=True,
    help="Retention: delete watch's captures older than this (7d, 12h).",
)
@click.option(
    "--keep-size",
    metavar="SIZE",
    default="2G",
    show_default=True,
    help="Retention: delete watch's oldest captures until they total at most this (500M, 5G).",
)
@click.option("--no-retention", is_flag=True, help="Delete nothing (the disk floor still stops captures).")
@click.option(
    "--print-unit",
    is_flag=True,
    help="Print a hardened systemd service running this watch in the foreground, and exit.",
)
@mysql_decorator
@fleet_options
def watch_cmd(
    pids,
    more_pids,
    triggers,
    cycles,
    interval,
    duration,
    cooldown,
    max_captures,
    disk_free,
    frequency,
    mode,
    off_cpu,
    base_dir,
    verbose,
    daemonize,
    pid_file,
    log_file,
    keep_count,
    keep_for,
    keep_size,
    no_retention,
    print_unit,
    **kwargs,
) -> None:
    """Poll the server cheaply and capture a profile when a condition holds for N polls in a row.

    Each poll is one SHOW GLOBAL STATUS WHERE ... query (plus one PROCESSLIST count for state:/command:
    triggers) on a kept-open connection, and /proc/PID/stat for cpu. Every capture's run.json gets a
    "trigger" key: the condition that fired and the polled values before and during the capture.
    Stops after --max-captures (unlimited by default) or on Ctrl-C / SIGTERM. Each capture also gets
    watch-polls.tsv: the last 60 polls before it and those during it (trigger values, mysqld CPU %,
    load average, run queue). After each capture, retention deletes watch's own oldest captures.
    With several servers (-p A,B or -p $(pidof mariadbd)) each is polled on its own proven connection and
    counts its own polls in a row; the first whose trigger holds is captured with the others in one
    recording (it first: the server facts are its), and the cooldown and --max-captures hold for all.
    """
    if daemonize != bool(log_file):
        raise UsageError(
            "--daemonize and --log-file go together", "e.g. --daemonize --log-file /var/log/pmuprof-watch.log"
        )
    keep = Retention(None, None, None) if no_retention else Retention(keep_count, keep_for, parse_size(keep_size))
    unit_args: dict[str, Any] = {
        "mysql": pop_mysql_argv(dict(kwargs)),
        "textfile": kwargs.get("textfile"),
        "notify_cmd": kwargs.get("notify_cmd"),
        "notify_timeout": kwargs.get("notify_timeout"),
    }
    publish_to = pop_publish(kwargs)
    plan = WatchPlan(
        tuple(parse_condition(t) for t in triggers),
        cycles=cycles,
        cooldown_s=_within("--cooldown", cooldown, 0, 7 * 86400),
        max_captures=max_captures,
    )
    mysql_opts, use_mysql = mysql_from_kwargs(kwargs)
    if not use_mysql and any(c.source != "cpu" for c in plan.conditions):
        raise UsageError("--no-mysql leaves only cpu triggers usable", "drop --no-mysql or use --trigger 'cpu>N'")
    duration_s = _within("--duration", duration, 1, MAX_DURATION_S)
    interval_s = _within("--interval", interval, 0.1, 3600)
    check_window(duration_s, frequency)  # everything a capture checks, now rather than when the trigger fires
    common.check_rules()
    if print_unit:
        if pids or more_pids or daemonize or pid_file:
            raise UsageError(
                "--print-unit runs watch under systemd: -p, --daemonize and --pid-file do not apply",
                "drop them: the service picks the running mysqld at each start and systemd keeps it",
            )
        watchunit.print_unit(
            plan,
            triggers=triggers,
            interval_s=interval_s,
            duration_s=duration_s,
            disk_free=disk_free,
            frequency=frequency,
            mode=mode,
            off_cpu=off_cpu,
            base_dir=base_dir,
            verbose=verbose,
            keep=keep,
            **unit_args,
        )
        return
    opts = WatchOptions(
        pids=_pick_pids(flat_pids(pids, more_pids)),
        plan=plan,
        base_dir=outfile.ensure_dir(base_dir),
        interval_s=interval_s,
        duration_s=duration_s,
        disk_floor=DiskFloor.parse(tuple(disk_free)),
        mysql_options=mysql_opts,
        record={"frequency": frequency, "mode": mode, "mysql": use_mysql, "off_cpu": off_cpu},
        verbose=verbose,
        command=tuple(["pmuprof"] + sys.argv[1:]),
        publish=publish_to,
        keep=keep,
    )
    pid_path = Path(pid_file).absolute() if pid_file else None
    log: Callable[[str], None] = common.log
    if daemonize:
        child = daemon.daemonize(pid_path, Path(log_file).absolute())
        if child is not None:
            common.log(f"watching in the background as pid {child}; log: {log_file}")
            return
        log = daemon.stamped(common.log)
    try:
        watch(opts, log)
    finally:
        if daemonize:
            daemon.release(pid_path)


def _within(option: str, seconds: float, low: float, high: float) -> float:
    """A duration already parsed by the Duration option type, checked against its range."""
    if not low <= seconds <= high:
        raise UsageError(f"{option} {seconds:g} s is out of range", f"use {low:g} s to {high:g} s")
    return seconds


def _pick_pids(pids: tuple[int, ...]) -> tuple[int, ...]:
    if pids:
        return tuple(dict.fromkeys(target.resolve_pid(p) for p in pids))
    found = target.find_mysqld()
    if len(found) != 1:
        raise TargetError(
            f"{len(found)} mysqld / mariadbd processes are running", "pass -p PID, or -p $(pidof mariadbd) for all"
        )
    return (found[0],)


COMMAND = watch_cmd

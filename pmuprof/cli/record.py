"""`pmuprof record`: capture a run directory (no report)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ..capture.proc import process as target
from ..capture.record import RecordOptions
from ..errors import TargetError
from ..pipeline import materialize
from ..rundir_create import unique_name
from . import common
from .params import flat_pids
from .mysqlopts import mysql_options, pop_mysql_options

EPILOG = """\b
Examples:
  pmuprof record -p $(pidof mariadbd) -d 30 -o /var/tmp/incident   # 30 s, per-CPU sampling, 99 Hz
  pmuprof record --all-mysqld -d 60                                # every instance on the host, side by side
  pmuprof record -p 1234 --call-graph dwarf -d 10                  # binary built without frame pointers
  pmuprof record -p 1234 --mode per-thread                         # perf record -p (costs more TPS)
  pmuprof record -p $(pidof mariadbd) --off-cpu -d 20              # also where threads wait (BPF, root)
"""


def build_options(
    pids,
    all_mysqld,
    duration,
    frequency,
    call_graph,
    mode,
    event,
    per_thread_roots,
    no_keep_perf_data,
    out_dir,
    mysql_options=None,
    use_mysql=True,
    off_cpu: bool | None = False,
    more_pids=(),
    share: bool = False,
) -> RecordOptions:
    chosen = flat_pids(pids, more_pids, target.find_mysqld() if all_mysqld else ())
    if all_mysqld and not chosen:
        raise TargetError("no mysqld / mariadbd process is running", "start the server or pass -p PID")
    if out_dir is None:
        first = target.describe(target.resolve_pid(chosen[0])).comm if chosen else "run"
        out_dir = unique_name(f"pmuprof-{first}")
    return RecordOptions(
        pids=chosen,
        out_dir=Path(out_dir),
        duration=duration,
        frequency=frequency,
        call_graph=call_graph,
        mode=mode,
        event=event,
        mysql=use_mysql,
        mysql_options=mysql_options,
        per_thread_roots=per_thread_roots,
        keep_perf_data=not no_keep_perf_data,
        off_cpu=off_cpu,
        command=tuple(["pmuprof"] + sys.argv[1:]),
        share=share,
    )


def mysql_decorator(func):
    """The server-connection options (--mysql-socket ... --no-mysql)."""
    return mysql_options(func)


def mysql_from_kwargs(kwargs: dict):
    """(MysqlOptions or None, use_mysql) from the parsed server options."""
    no_mysql = bool(kwargs.get("no_mysql"))
    return pop_mysql_options(kwargs), not no_mysql


@click.command("record", epilog=EPILOG)
@common.capture_options
@mysql_decorator
@click.option("--json", "as_json", is_flag=True, help="Print {run_dir, samples, warnings} as JSON on stdout.")
def record_cmd(quiet: bool, as_json: bool, **kwargs) -> None:
    """Record perf samples, counters and server facts of running mysqld(s) into a run directory.

    Read-only: the server is never stopped or ptraced. Turn it into a report with `pmuprof report DIR`.
    """
    mysql_opts, use_mysql = mysql_from_kwargs(kwargs)
    opts = build_options(**kwargs, mysql_options=mysql_opts, use_mysql=use_mysql)
    common.check_rules()
    out = common.recorded(opts, quiet)
    profile, late = common.after_record(
        out, lambda: materialize(out, log=common.log, keep_perf_data=opts.keep_perf_data)
    )
    common.say_problems(profile)
    common.log(f"run directory: {out}")
    common.end_of_capture(profile.run, str(out), opts.off_cpu is True)
    if late:
        raise common.late_stop(late, str(out))
    if as_json:
        warnings = list(dict.fromkeys(profile.run.warnings + profile.analysis.warnings))
        click.echo(json.dumps({"run_dir": str(out), "samples": profile.total, "warnings": warnings}, indent=2))


COMMAND = record_cmd

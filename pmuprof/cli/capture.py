"""`pmuprof capture`: record + report in one go (the incident command)."""

from __future__ import annotations

import json
import time

import click

from ..pipeline import report_run
from ..report.summary import run_summary
from ..report.waiting import waiting
from ..workflows.fleet import Outcome, facts_missing, hostname, publish
from ..workflows.schedule import EXIT_CRITICAL, EXIT_WARNING, findings_exit_code
from . import common
from .fleetopts import fleet_options, pop_publish, published_on_error
from .record import build_options, mysql_decorator, mysql_from_kwargs

EPILOG = """\b
Examples:
  pmuprof capture -p $(pidof mariadbd)                  # 30 s at 99 Hz per CPU; report in ./pmuprof-*/
  pmuprof capture -p $(pidof mysqld) -d 10s -o /tmp/r1  # short capture during a spike
  pmuprof capture -p 1234 --off-cpu                     # where threads wait, even where it costs more (old kernels)
  pmuprof capture -p 1234 --no-off-cpu                  # on-CPU samples only
  pmuprof capture -p 1234 -h 127.0.0.1 -P 3307 -u prof  # server facts over TCP, mysql-client options
  pmuprof capture --all-mysqld -d 1m                    # several instances compared side by side
  pmuprof capture -p 1234 --exit-code-on-findings       # nightly: exit 10 on warning, 20 on critical
  pmuprof capture -p 1234 --json | jq -r .verdict       # one-line verdict for scripts
  pmuprof capture --all-mysqld --textfile /var/lib/prometheus/node-exporter/pmuprof.prom   # fleet metrics
"""


@click.command("capture", epilog=EPILOG)
@common.capture_options(off_cpu_default=None)
@mysql_decorator
@click.option(
    "--exit-code-on-findings",
    is_flag=True,
    help=f"Exit {EXIT_WARNING} when a warning finding appears, {EXIT_CRITICAL} for a critical one.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print a JSON summary on stdout: run_dir, samples, verdict, exit_code, files, findings.",
)
@fleet_options
def capture_cmd(quiet: bool, exit_code_on_findings: bool, as_json: bool, **kwargs) -> None:
    """Profile running mysqld(s) and write the HTML report, findings.json and report.md.

    Samples per CPU at 99 Hz by default and keeps only the targets' stacks (cheapest; see README
    OVERHEAD). The server is never stopped or ptraced; Ctrl-C stops early and reports what was captured.
    """
    target = pop_publish(kwargs)
    mysql_opts, use_mysql = mysql_from_kwargs(kwargs)
    out = None
    with published_on_error(target, lambda: out):
        opts = build_options(**kwargs, mysql_options=mysql_opts, use_mysql=use_mysql)
        rules = common.check_rules()
        out = opts.out_dir
        out = common.recorded(opts, quiet)
        result, late = common.after_record(out, lambda: report_run(out, rules, common.log, opts.keep_perf_data))
        profile = result.profile
    code = findings_exit_code(result.findings) if exit_code_on_findings else 0
    html = str(result.paths["html"])
    problem = common.capture_problem(profile.run, html, opts.off_cpu is True) or facts_missing(profile, use_mysql, html)
    publish(
        target,
        Outcome(
            problem.exit_code if problem else code,
            out,
            profile,
            result.diagnosis,
            error=str(problem) if problem else "",
            ended=time.time(),
        ),
        common.log,
    )
    common.say_problems(profile)
    if not profile.total:
        common.log("no samples of the target: it was idle or off-CPU during the capture (the report says so)")
    common.log(f"report: {result.paths['html']}")
    note = waiting(profile)
    if note:
        common.log(f"{note.sentence()} {note.command}")
    common.say_findings(result.diagnosis)
    if problem is not None:  # cut short: the report is written, the metrics said so, the exit status too
        raise problem
    if late:
        raise common.late_stop(late, str(result.paths["html"]))
    if as_json:
        summary = run_summary(out, profile.total, result.diagnosis, result.paths, code, hostname(profile))
        click.echo(json.dumps(summary, indent=2, sort_keys=True, ensure_ascii=False))
    if code:
        raise click.exceptions.Exit(code)


COMMAND = capture_cmd

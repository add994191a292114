"""`pmuprof capture`: record + report in one go (the incident command)."""

from __future__ import annotations

import click

from ..pipeline import materialize, report_profile
from ..workflows.schedule import EXIT_CRITICAL, EXIT_WARNING, findings_exit_code
from . import common
from .record import build_options, mysql_decorator, mysql_from_kwargs

EPILOG = """\b
Examples:
  pmuprof capture -p $(pidof mariadbd)                  # 30 s at 99 Hz per CPU; report in ./pmuprof-*/
  pmuprof capture -p $(pidof mysqld) -d 10 -o /tmp/r1   # short capture during a spike
  pmuprof capture --all-mysqld -d 60                    # several instances compared side by side
  pmuprof capture -p 1234 --exit-code-on-findings       # nightly: exit 10 on warning, 20 on critical
"""


@click.command("capture", epilog=EPILOG)
@common.capture_options
@mysql_decorator
@click.option("--exit-code-on-findings", is_flag=True,
              help=f"Exit {EXIT_WARNING} when a warning finding appears, {EXIT_CRITICAL} for a critical one.")
def capture_cmd(quiet: bool, exit_code_on_findings: bool, **kwargs) -> None:
    """Profile running mysqld(s) and write the HTML report, findings.json and report.md.

    Samples per CPU at 99 Hz by default and keeps only the targets' stacks (cheapest; see README
    OVERHEAD). The server is never stopped or ptraced; Ctrl-C stops early and reports what was captured.
    """
    mysql_opts, use_mysql = mysql_from_kwargs(kwargs)
    opts = build_options(**kwargs, mysql_options=mysql_opts, use_mysql=use_mysql)
    common.check_rules()
    out = common.recorded(opts, quiet)
    result = common.after_record(out, lambda: report_profile(materialize(out, log=common.log), out))
    profile = result.profile
    common.say_problems(profile)
    if not profile.total:
        common.log("no samples of the target: it was idle or off-CPU during the capture (the report says so)")
    common.log(f"report: {result.paths['html']}")
    common.say_findings(result.findings)
    common.end_of_capture(profile.run, str(result.paths["html"]))
    if exit_code_on_findings:
        raise click.exceptions.Exit(findings_exit_code(result.findings))


COMMAND = capture_cmd

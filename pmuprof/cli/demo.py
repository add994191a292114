"""`pmuprof demo`: build and run the demo workload, capture it, and write its report."""

from __future__ import annotations

from pathlib import Path

import click

from ..workflows.demo import SCENARIOS, DemoOptions, run_demo
from . import common
from .params import DURATION_HELP, Duration

EPILOG = """\b
Examples:
  pmuprof demo                                   # mixed scenario, 10 s, report in ./pmuprof-demo-mixed-*/
  pmuprof demo --scenario index-dive -o /tmp/d1  # ut_delay under fil_space_get: spin + index-dive findings
  pmuprof demo --scenario spin                   # ut_delay under rw_lock_sx_lock_func: spin, no index dive
  pmuprof demo --scenario page-cleaner -d 5      # os_rmb as mfence and ut_time_ms in the page cleaner
  pmuprof demo --scenario healthy                # a scan-heavy profile: no warning expected
  pmuprof demo --scenario blocking               # row-lock waits, a mutex sleep and fsync: off-CPU (root)
  pmuprof demo --scenario spike -d 12            # light load with 3 s of index dives in the middle: see the Seconds strip
  pmuprof demo --scenario index-dive --spin-wait-delay 6   # the fix: compare ut_delay's share
"""


@click.command("demo", epilog=EPILOG)
@click.option(
    "--scenario",
    type=click.Choice(SCENARIOS),
    default="mixed",
    show_default=True,
    help="Which pathology the workload reproduces.",
)
@click.option(
    "-d",
    "--duration",
    type=Duration(1, 600),
    default="10s",
    show_default=True,
    help=f"How long to record ({DURATION_HELP}).",
)
@click.option(
    "-o",
    "--output",
    "out_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Run directory to create (default ./pmuprof-demo-<scenario>-<time>).",
)
@click.option(
    "--spin-wait-delay",
    type=click.IntRange(0, 6000),
    default=30,
    show_default=True,
    help="Like innodb_spin_wait_delay: ut_delay runs random[0, D) * 50 PAUSEs.",
)
@click.option(
    "--threads",
    type=click.IntRange(1, 64),
    default=4,
    show_default=True,
    help="Worker threads (connections or page-cleaner workers).",
)
@click.option(
    "-F",
    "--frequency",
    type=click.IntRange(1, 10000),
    default=499,
    show_default=True,
    help="Samples per second per CPU (capture defaults to 99; the demo takes more for steadier numbers).",
)
@click.option(
    "--off-cpu/--no-off-cpu",
    "off_cpu",
    default=None,
    help="Also record off-CPU time (BPF, root); default: on for --scenario blocking only.",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress line.")
def demo_cmd(
    scenario: str,
    duration: float,
    out_dir: str | None,
    spin_wait_delay: int,
    threads: int,
    frequency: int,
    off_cpu: bool | None,
    quiet: bool,
) -> None:
    """Try pmuprof without a database: profile a workload with InnoDB-like frames.

    Builds examples/demo with gcc (cached in ~/.cache/pmuprof/demo), starts it, waits 1 s,
    captures it like `pmuprof capture -p PID`, writes the report into the run directory and
    stops the workload (also on Ctrl-C or error). Needs perf and gcc; run as root or with
    kernel.perf_event_paranoid <= 0 for the default per-CPU sampling.
    """
    opts = DemoOptions(
        scenario=scenario,
        duration=duration,
        threads=threads,
        spin_wait_delay=spin_wait_delay,
        frequency=frequency,
        out_dir=Path(out_dir) if out_dir else None,
        off_cpu=off_cpu,
    )
    result = run_demo(opts, common.progress_printer(not quiet), common.log)
    run_dir = result.run_dir
    common.log(f"run directory: {run_dir}")
    common.log(f"report: {result.report.paths.get('html', run_dir / 'report.html')}")
    if not result.report.diagnosis.findings:
        common.log("no findings (expected for --scenario healthy)")
    common.say_findings(result.report.diagnosis, chains=True)
    common.end_of_capture(result.report.profile.run, str(result.report.paths.get("html", run_dir)))


COMMAND = demo_cmd

"""Build, start and stop the demo workload (examples/demo), and capture it for `pmuprof demo`."""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Callable

from .. import outfile
from ..capture.record import RecordOptions, record
from ..capture.runner import Progress
from ..tools import proc as tools_proc
from ..errors import PmuprofError, UsageError
from ..model import rundir
from ..model.server import ServerFacts, ServerVersion
from ..packages import apt_install
from ..paths import cache_dir, demo_source_dir
from ..pipeline import Result, report_run
from ..rundir_create import check_new, unique_name

SCENARIOS = ("mixed", "index-dive", "spin", "page-cleaner", "healthy", "blocking", "spike")
OFF_CPU_SCENARIOS = ("blocking",)  # scenarios whose point is waiting: recorded with --off-cpu by default
SPIKE_S = 3.0  # scenario spike: index dives for this long in the middle of the capture
DEMO_SOURCE = "pmuprof_demo.c"
DEMO_BINARY = "pmuprof-demo"  # also the process comm perf reports
# Frame pointers everywhere and every named function a real frame: see examples/demo/Makefile.
DEMO_CFLAGS = (
    "-O2",
    "-g",
    "-fno-omit-frame-pointer",
    "-fno-inline-functions-called-once",
    "-fno-optimize-sibling-calls",
    "-Wall",
)
BUILD_HINT = apt_install("compiler")
START_TIMEOUT_S = 120.0  # the workload prints its pid line at once: this long without it is a hang
# The workload stops itself this long after the capture should have ended, even if nobody stops it.
SELF_STOP_MARGIN_S = 60.0
WORKLOAD_LOG = "workload.log"  # in the run directory: the workload's argv, summary and exit status


class DemoError(PmuprofError):
    """The demo workload could not be built or started."""


def default_cache_dir() -> Path:
    """$PMUPROF_CACHE/demo, else $XDG_CACHE_HOME/pmuprof/demo, else ~/.cache/pmuprof/demo."""
    return cache_dir("demo")


def _writable_dir(preferred: Path) -> Path:
    try:
        preferred.mkdir(parents=True, exist_ok=True)
        if os.access(preferred, os.W_OK):
            return preferred
    except OSError:
        pass
    fallback = Path(tempfile.gettempdir()) / f"pmuprof-demo-{os.getuid()}"
    fallback.mkdir(mode=0o700, exist_ok=True)
    return fallback


def _source_stamp(source: Path, compiler: str) -> str:
    """What the binary was built from: the source text, the flags and the compiler path."""
    digest = hashlib.sha256(source.read_bytes())
    digest.update("\0".join((compiler,) + DEMO_CFLAGS).encode())
    return digest.hexdigest()


def build_demo(cache_dir: Path | None = None, source_dir: Path | None = None) -> Path:
    """Compile the workload into the cache (never into the package) and return the binary.

    The binary is rebuilt when the source, the flags or the compiler changed; a build is
    written to a temporary name and renamed, so concurrent builds never see half a file.
    """
    source = (source_dir or demo_source_dir()) / DEMO_SOURCE
    if not source.is_file():
        raise DemoError(f"demo source {source} is missing", "reinstall pmuprof (pip install .) from a full checkout")
    compiler = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if not compiler:
        raise DemoError("gcc is not installed: the demo workload is built from C source", BUILD_HINT)
    out_dir = _writable_dir(Path(cache_dir) if cache_dir else default_cache_dir())
    binary = out_dir / DEMO_BINARY
    stamp_path = out_dir / f"{DEMO_BINARY}.stamp"
    stamp = _source_stamp(source, compiler)
    if binary.is_file() and stamp_path.is_file() and stamp_path.read_text().strip() == stamp:
        return binary
    tmp = out_dir / f".{DEMO_BINARY}.{os.getpid()}.tmp"
    argv = [compiler, *DEMO_CFLAGS, "-o", str(tmp), str(source), "-pthread"]
    try:
        done = tools_proc.run(argv, timeout=120, stall=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise DemoError(f"cannot run {compiler}: {err}", BUILD_HINT) from err
    if done.returncode != 0:
        tmp.unlink(missing_ok=True)
        first = next((ln for ln in done.stderr.splitlines() if "error" in ln), done.stderr.strip()[:200])
        raise DemoError(
            f"building the demo workload failed: {first}",
            f"{BUILD_HINT}; build by hand with make -C {source.parent} OUT=/tmp/demo",
        )
    os.replace(tmp, binary)
    stamp_path.write_text(stamp + "\n")
    return binary


def demo_argv(
    binary: Path, scenario: str, threads: int, spin_wait_delay: int, seconds: float, spike_at: float = 0.0
) -> list[str]:
    """The workload's command line (pure; validated here so bad values fail before anything runs)."""
    if scenario not in SCENARIOS:
        raise UsageError(f"unknown demo scenario {scenario!r}", f"use one of: {', '.join(SCENARIOS)}")
    if not 1 <= threads <= 64:
        raise UsageError(f"--threads {threads} is out of range", "use 1..64")
    if not 0 <= spin_wait_delay <= 6000:
        raise UsageError(f"--spin-wait-delay {spin_wait_delay} is out of range", "use 0..6000 (InnoDB's default is 6)")
    if seconds < 0:
        raise UsageError(f"demo seconds {seconds} is negative", "use 0 (until stopped) or more")
    # the spike counts from SIGUSR1, sent when perf's window opens (run_demo): perf can take seconds to start
    spike = (
        ["--spike-at", f"{spike_at:g}", "--spike-len", f"{SPIKE_S:g}", "--spike-on-usr1"] if scenario == "spike" else []
    )
    return [
        str(binary),
        "--scenario",
        scenario,
        "--threads",
        str(threads),
        "--spin-wait-delay",
        str(spin_wait_delay),
        "--seconds",
        f"{seconds:g}",
        "--die-with-parent",
        *spike,
    ]


def start_demo(
    scenario: str = "mixed",
    threads: int = 4,
    spin_wait_delay: int = 30,
    seconds: float = 0,
    binary: Path | None = None,
    spike_at: float = 0.0,
) -> subprocess.Popen:
    """Start the workload and return once its threads run (it prints its pid line then)."""
    argv = demo_argv(binary or build_demo(), scenario, threads, spin_wait_delay, seconds, spike_at)
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = _read_line(proc, START_TIMEOUT_S)
    except BaseException:
        stop_demo(proc)
        raise
    if not line.startswith("pmuprof-demo: pid"):
        err = proc.stderr.read() if proc.poll() is not None and proc.stderr else ""
        stop_demo(proc)
        raise DemoError(
            f"the demo workload did not start: {(err or line or 'no output').strip().splitlines()[0]}",
            "run it by hand to see why: " + " ".join(argv),
        )
    return proc


def _read_line(proc: subprocess.Popen, timeout: float) -> str:
    """One line of the child's stdout, or '' after ``timeout`` seconds or when it exits."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    return proc.stdout.readline() if ready else ""


def stop_demo(proc: subprocess.Popen, timeout: float = 5.0, log_path: Path | None = None) -> int | None:
    """SIGTERM, then SIGKILL after ``timeout`` seconds; reap it and close its pipes. Returns its exit code.

    With ``log_path``, what the workload printed since it started (its summary: queries, page
    flushes, spin rounds per latch) is written there.
    """
    if proc.poll() is None:
        try:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        except ProcessLookupError:
            pass
    text = []
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            if log_path is not None:  # the child has exited: read() ends at EOF
                text.append(pipe.read())
            pipe.close()
    if log_path is not None:
        outfile.write_text(
            log_path,
            "$ " + " ".join(tools_proc.argv_of(proc)) + "\n" + "".join(text) + f"exit status {proc.returncode}\n",
        )
    return proc.returncode


@dataclass(frozen=True)
class DemoOptions:
    scenario: str = "mixed"
    duration: float = 10.0
    threads: int = 4
    spin_wait_delay: int = 30
    frequency: int = 499  # a demo is not a production server: more samples, steadier findings
    mode: str = "per-cpu"  # or "per-thread" (perf record -p: fine for a demo, cheaper to post-process)
    out_dir: Path | None = None
    warmup_s: float = 1.0
    cache_dir: Path | None = None
    off_cpu: bool | None = None  # None: on for the scenarios where threads block (OFF_CPU_SCENARIOS)

    @property
    def records_off_cpu(self) -> bool:
        return self.scenario in OFF_CPU_SCENARIOS if self.off_cpu is None else self.off_cpu


def default_out_dir(scenario: str, now: _dt.datetime | None = None) -> Path:
    return Path.cwd() / unique_name(f"pmuprof-demo-{scenario}", now)


@dataclass(frozen=True)
class DemoResult:
    report: Result
    run_dir: Path
    workload_argv: tuple[str, ...]
    workload_status: int | None


def workload_facts(opts: DemoOptions) -> ServerFacts:
    """mysql.json for a demo run: the workload's own spin settings, labelled as such.

    The demo is not a server, but it runs InnoDB's spin loop with these settings; giving them
    to the rules lets the spin finding compute its advice exactly as it would for mysqld.
    """
    return ServerFacts(
        reachable=True,
        source="pmuprof demo: the workload's command-line settings (no server was queried)",
        server=ServerVersion(version_comment="pmuprof-demo workload, not a server"),
        variables={
            "innodb_spin_wait_delay": str(opts.spin_wait_delay),
            "innodb_sync_spin_loops": "30",
            **({"innodb_flush_log_at_trx_commit": "1"} if opts.scenario == "blocking" else {}),
        },
        missing=("the demo workload is not a server: no version, status, SEMAPHORES, processlist or error log",),
    )


def _window_opened(proc: subprocess.Popen[bytes], scenario: str, progress: Progress | None) -> Progress | None:
    """The progress callback, which (scenario spike) first tells the workload that perf's window is open:
    the spike then lands in the middle of the window however long perf took to start."""
    if scenario != "spike":
        return progress
    told: list[bool] = []

    def on_progress(elapsed: float, duration: float, size: int) -> None:
        if not told and proc.poll() is None:
            proc.send_signal(signal.SIGUSR1)
            told.append(True)
        if progress:
            progress(elapsed, duration, size)

    return on_progress


def run_demo(
    opts: DemoOptions, progress: Progress | None = None, log: Callable[[str], None] = lambda _m: None
) -> DemoResult:
    """Build and start the workload, capture it (record + report), and always stop it.

    Returns the pipeline's result plus ``run_dir`` and ``workload`` (its argv and exit code).
    """
    out_dir = Path(opts.out_dir) if opts.out_dir else default_out_dir(opts.scenario)
    check_new(out_dir)  # before the workload is built and started
    binary = build_demo(opts.cache_dir)
    seconds = opts.warmup_s + opts.duration + SELF_STOP_MARGIN_S
    proc = start_demo(
        opts.scenario, opts.threads, opts.spin_wait_delay, seconds, binary, spike_at=(opts.duration - SPIKE_S) / 2
    )
    log(
        f"started {DEMO_BINARY} (pid {proc.pid}): scenario {opts.scenario}, {opts.threads} threads, "
        f"spin_wait_delay {opts.spin_wait_delay}"
    )
    stopped: list[int | None] = []
    try:
        time.sleep(opts.warmup_s)
        if proc.poll() is not None:
            raise DemoError(
                f"the demo workload exited early (status {proc.returncode})",
                "run it by hand: " + " ".join(tools_proc.argv_of(proc)),
            )
        command = (
            "pmuprof",
            "demo",
            "--scenario",
            opts.scenario,
            "--duration",
            f"{opts.duration:g}",
            "--threads",
            str(opts.threads),
            "--spin-wait-delay",
            str(opts.spin_wait_delay),
        ) + (("--off-cpu",) if opts.records_off_cpu else ())
        rec = RecordOptions(
            pids=(proc.pid,),
            out_dir=out_dir,
            duration=opts.duration,
            frequency=opts.frequency,
            mode=opts.mode,
            mysql=False,
            command=command,
            off_cpu=opts.records_off_cpu,
        )

        def stop_now() -> None:  # as soon as perf stops, so folding has both CPUs
            stopped.append(stop_demo(proc, log_path=out_dir / WORKLOAD_LOG))

        run_dir = record(rec, _window_opened(proc, opts.scenario, progress), log, on_recorded=stop_now)
    finally:
        status = (
            stopped[0] if stopped else stop_demo(proc, log_path=out_dir / WORKLOAD_LOG if out_dir.is_dir() else None)
        )
    rundir.write_typed(run_dir / rundir.MYSQL, workload_facts(opts))
    result = report_run(run_dir, log=log)
    return DemoResult(result, run_dir, tuple(tools_proc.argv_of(proc)), status)

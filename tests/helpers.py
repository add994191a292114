"""Small test helpers: compile a busy C program, run the CLI in this process (cli) or as a subprocess (run_cli)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from pmuprof.capture.runner import die_with_parent
from pmuprof.model.analysis import Analysis
from pmuprof.model.counters import Counters
from pmuprof.model.jsontypes import from_json
from pmuprof.model.profile import Profile
from pmuprof.model.run import Run
from pmuprof.model.server import ServerFacts

REPO = Path(__file__).resolve().parent.parent
FAKE_PERF = {"PMUPROF_PERF": str(REPO / "tests" / "fakeperf" / "perf")}  # env: capture through the canned perf

BUSY_C = r"""
#include <stdlib.h>
#include <unistd.h>
volatile long sink;
__attribute__((noinline)) void hot_leaf(void) { for (long i = 0; i < 200000; i++) sink += i * 7; }
__attribute__((noinline)) void warm_caller(void) { hot_leaf(); sink++; }
int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 1e9;
    long rounds = (long)(seconds * 3000);
    for (long r = 0; r < rounds; r++) warm_caller();
    return 0;
}
"""


HOST_RULES = frozenset({"host-saturated"})  # about the host, not the workload: a loaded CI host may have them


def fix_text(finding: dict, kind: str | None = None) -> str:
    """A findings.json finding's fix steps (only those of ``kind``: sql, my.cnf, shell, note) as one text."""
    return "\n".join(s["text"] for s in finding["fix"] if kind in (None, s["kind"]))


def held_below(finding: dict, level: str) -> bool:
    """Whether pmuprof held the finding below ``level`` because its share's samples were too few threads on the CPU
    for that level, and says so (findings/grade.py MIN_THREADS): what a starved server may get."""
    order = ("info", "warning", "critical")
    return order.index(finding["severity"]) < order.index(level) and any(
        f"a {level} finding needs" in m for m in finding.get("missing", [])
    )


def held_at_info(finding: dict) -> bool:
    """Whether pmuprof held the finding at info for lack of CPU, and says so: too few samples, or too few threads
    on the CPU for a warning (findings/grade.py). On the suite's host two 16-thread loads side by side leave a
    server a few percent of a CPU (runnable 38 on 2 CPUs, seen)."""
    return finding["severity"] == "info" and any(
        "severity capped at info" in m or ("threads on the CPU on average" in m and m.endswith(": info"))
        for m in finding.get("missing", [])
    )


def crowded(doc: dict) -> bool:
    """Whether findings.json's host-saturated fired at all: others took at least 30 % of the CPU time while tasks
    waited (rules/host-saturated.yaml). A crowded host preempts lock holders and favours threads that never
    sleep: tests that rank findings allow for that there."""
    return any(f["rule"] == "host-saturated" for f in doc["findings"])


def workload_findings(doc: dict) -> dict:
    """findings.json without the findings about the host, for tests of what the workload's stacks say (the
    suite's hosts are shared and may well be saturated; tests/integration/test_host_load.py covers those)."""
    kept = [f for f in doc["findings"] if f["rule"] not in HOST_RULES]
    verdict = doc.get("verdict") or {}
    if verdict.get("rule") in HOST_RULES:
        top = next((f for f in kept if not f.get("explained_by") and f["severity"] != "info"), None)
        verdict = {**verdict, "rule": top["rule"] if top else None, "severity": top["severity"] if top else None}
    return {**doc, "findings": kept, "verdict": verdict}


def build_busy(tmp: Path) -> Path:
    if not shutil.which("gcc"):
        pytest.skip("gcc is not installed (apt-get install build-essential)")
    src, exe = tmp / "busy.c", tmp / "pmuprof-busy"
    src.write_text(BUSY_C)
    subprocess.run(["gcc", "-O1", "-fno-omit-frame-pointer", "-o", str(exe), str(src)], check=True)
    return exe


def spawn_named(argv: list[str]) -> subprocess.Popen:
    """Start ``argv`` and return once the kernel shows it under its own name. Popen returns when the exec has
    released the parent's memory, before the exec sets the command name: a capture begun at once may name the
    target "python3" (its comm, the default run directory's name, the stacks' first frame)."""
    proc = subprocess.Popen(argv)
    comm, deadline = Path(f"/proc/{proc.pid}/comm"), time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        if comm.read_text().strip() == Path(argv[0]).name[:15]:  # TASK_COMM_LEN: 15 characters
            break
        time.sleep(0.001)
    return proc


class Hogs:
    """``per_cpu`` busy shells per CPU: the run queue far above the CPU count whatever else the host runs.
    stop() kills them (a test once the recording has ended: capture_under); pause() and resume() hold them
    while pmuprof starts when capture_under is given the Hogs themselves, so they spin in the window, not
    through pmuprof's start."""

    def __init__(self, per_cpu: int) -> None:
        self.procs = [
            subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(per_cpu * (os.cpu_count() or 1))
        ]

    def _signal(self, sig: int) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(sig)

    def pause(self) -> None:
        self._signal(signal.SIGSTOP)

    def resume(self) -> None:
        self._signal(signal.SIGCONT)

    def stop(self) -> None:
        for p in self.procs:
            p.kill()  # SIGKILL ends a stopped process too
        for p in self.procs:
            p.wait()


@contextlib.contextmanager
def spinning(proc: subprocess.Popen) -> Iterator[subprocess.Popen]:
    """A held (SIGSTOPped) process running for the block, held again after it (tests/integration/conftest.py's
    busy_process)."""
    proc.send_signal(signal.SIGCONT)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGSTOP)


def need_perf() -> str:
    perf = shutil.which("perf")
    if not perf:
        pytest.skip("perf is not installed (apt-get install linux-perf)")
    if os.geteuid() != 0:
        pytest.skip("system-wide perf needs root here")
    return perf


def run_cli(
    *args: str, env: dict | None = None, timeout: float = 900, own_session: bool = False
) -> subprocess.CompletedProcess:
    """``python -m pmuprof ARGS`` as a real process (``timeout``: a hang detector, never the pass condition).
    ``own_session``: a scheduling group of its own (LiveCapture says why), ended with the test (die_with_parent:
    out of reach of its tier's group signal, tests/run_tiers.py)."""
    full_env = {**os.environ, **(env or {})}
    full_env["PYTHONPATH"] = str(REPO) + os.pathsep + full_env.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-m", "pmuprof", *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        start_new_session=own_session,
        preexec_fn=die_with_parent() if own_session else None,
    )


def demo_cli(out: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """``pmuprof demo ARGS -o OUT`` (run_cli) holding the CPUs until its recording has ended: its workload's
    threads spin flat out for the whole window, as a saturating sysbench does (one flat-out load at a time,
    docs/development.md), and stop there (the demo's on_recorded); its folding and report are a report's."""
    with cpus_held_while_recording(out):
        return run_cli("demo", *args, "-o", str(out), timeout=timeout, own_session=True)


@contextlib.contextmanager
def cpus_held_while_recording(out: Path) -> Iterator[None]:
    """shared.cpus_held for a block that runs a flat-out load and a capture into ``out`` of it, released as soon
    as the capture's window is done (window_done: the load is no longer read) or the block ends, whichever is
    first. A thread watches ``out``; one of the two releases, once."""
    import threading

    from shared import hold_cpus, release_cpus

    released, once = threading.Event(), threading.Lock()

    def release() -> None:
        with once:
            if not released.is_set():
                released.set()
                release_cpus()

    def watch() -> None:
        while not released.wait(0.05):
            if window_done(out):
                release()

    watcher = threading.Thread(target=watch, name="cpus-held-while-recording", daemon=True)
    hold_cpus()
    try:  # the block must not hold or release the CPUs itself: shared._hold is this thread's and the watcher's
        watcher.start()
        yield
    finally:
        release()
        if watcher.is_alive():
            watcher.join()


def recorded(out: Path) -> bool:
    """Whether the capture into ``out`` has ended its recording: run.json, written last, lists its sources
    (perf's window and every source beside it have stopped); folding and analysis come after."""
    import json

    try:
        return bool(json.loads((out / "run.json").read_text()).get("sources"))
    except (OSError, ValueError):  # not written yet (each write is a rename: never half a file)
        return False


def window_done(out: Path) -> bool:
    """Whether the capture into ``out`` no longer reads the load: perf's window has ended (perf told to stop)
    and the per-second sources have stopped (capture/lifecycle.py). status.json, the server counters' file, is
    written by the last per-second source to stop (capture/sources.py), after its closing poll; what comes
    after it (perf writing the build-ids of what it sampled, off-CPU folding, the kept binaries and kernel
    symbols: seconds) reads files. A capture without it (no server connection): run.json listing its sources (``recorded``)."""
    return (out / "status.json").exists() or recorded(out)


class LiveCapture:
    """``pmuprof capture ARGS -o OUT`` for each ``(OUT, ARGS)`` of ``runs``, begun together as run_cli runs it,
    with ``load`` (a sysbench load, anything else with ``stop()`` or a function that stops it, or a list of them)
    stopped as soon as every recording has ended (``window_done``), before the captures' last files and reports.

    What a window records is the same; the report's analysis (folding, the binaries, skid) then has the CPU to
    itself instead of sharing it with sixteen clients and the server serving them, which costs the suite seconds
    of wall clock and twice that of CPU per capture. A load that can ``pause()`` (a connected SysbenchLoad) is
    held while pmuprof starts (its imports and checks, seconds on a busy host) and resumed once every run.json
    is there, before any source or perf starts: the clients, already connected, carry on where they were, and
    the windows record the same steady load. ``timeout``: a hang detector.

        procs = LiveCapture(load, (out1, ("-p", pid, "-d", "5")), (out2, (..., "--mode", "per-thread"))).results()"""

    def __init__(self, load, *runs: tuple[Path, Sequence[str]], env: dict | None = None, timeout: float = 900) -> None:
        import tempfile
        from types import SimpleNamespace

        full_env = {**os.environ, **(env or {})}
        full_env["PYTHONPATH"] = str(REPO) + os.pathsep + full_env.get("PYTHONPATH", "")
        loads = load if isinstance(load, (list, tuple)) else [load]
        self._loads = [SimpleNamespace(stop=x) if callable(x) and not hasattr(x, "stop") else x for x in loads]
        self._held = [each for each in self._loads if hasattr(each, "pause")]
        self._stopped = False
        self._deadline, self._timeout = time.monotonic() + timeout, timeout
        self._runs: list[tuple[Path, list[str], subprocess.Popen, Any, Any]] = []
        self._results: list[subprocess.CompletedProcess] | None = None
        for each in self._held:
            each.pause()
        try:
            for out, args in runs:
                argv = [sys.executable, "-m", "pmuprof", "capture", *map(str, args), "-o", str(out)]
                so, se = tempfile.TemporaryFile(), tempfile.TemporaryFile()
                # a session of its own is a scheduling group of its own (autogroup, docs/development.md): its
                # start-up and report get a share of the CPUs, not a slice of the tier's, while the load waits
                proc = subprocess.Popen(
                    argv,
                    stdout=so,
                    stderr=se,
                    env=full_env,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                    preexec_fn=die_with_parent(),  # ends with the test: its tier's group signal no longer reaches it
                )
                self._runs.append((Path(out), argv, proc, so, se))
        except BaseException:
            self.kill()
            raise

    def _all(self, reached: Callable[[Path], bool]) -> bool:
        """Whether every capture has reached ``reached`` (its run directory) or ended."""
        return all(proc.poll() is not None or reached(out) for out, _, proc, _, _ in self._runs)

    def _ended(self) -> bool:
        return self._all(lambda out: False)

    def _step(self) -> None:
        """Resume the held loads once every run.json is there; stop every load once every window is done."""
        if self._held and self._all(lambda out: (out / "run.json").exists()):  # before the sources and perf
            for each in self._held:
                each.resume()
            self._held = []
        if not self._stopped and self._all(window_done):
            self._release()

    def _until(self, done: Callable[[], bool]) -> None:
        try:
            while not self._ended() and not done():
                running = [str(out) for out, _, proc, _, _ in self._runs if proc.poll() is None]
                assert time.monotonic() < self._deadline, (
                    f"pmuprof capture still running after {self._timeout:g} s (hung?): {', '.join(running)}"
                )
                self._step()
                time.sleep(0.01 if self._held else 0.05)
        except BaseException:
            self.kill()
            raise
        if self._ended():
            self._release()

    def results(self) -> list[subprocess.CompletedProcess]:
        """Each capture's exit status and output, once every one has ended (in the order of ``runs``)."""
        if self._results is None:
            self._until(lambda: False)
            self._results = [self._finished(run) for run in self._runs]
        return self._results

    def result(self) -> subprocess.CompletedProcess:
        """The one capture's exit status and output, once it has ended."""
        (only,) = self.results()
        return only

    @staticmethod
    def _finished(run: tuple[Path, list[str], subprocess.Popen, Any, Any]) -> subprocess.CompletedProcess:
        _, argv, proc, so, se = run
        so.seek(0)
        se.seek(0)
        out, err = so.read().decode(), se.read().decode()
        so.close()
        se.close()
        return subprocess.CompletedProcess(argv, proc.returncode, out, err)

    def kill(self) -> None:
        """End every capture (SIGKILL) and every load now: a test that gives up on them."""
        for _, _, proc, so, se in self._runs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            so.close()
            se.close()
        self._results = [
            subprocess.CompletedProcess(argv, proc.returncode, "", "") for _, argv, proc, _, _ in self._runs
        ]
        self._release()

    def _release(self) -> None:
        """The held loads resumed, and every load stopped (once)."""
        for each in self._held:
            each.resume()
        self._held = []
        if not self._stopped:
            self._stopped = True
            for each in self._loads:
                each.stop()


def capture_under(load, out: Path, *args: str, env: dict | None = None, timeout: float = 900):
    """``pmuprof capture ARGS -o OUT`` under ``load``, to its end (LiveCapture: the load is held while pmuprof
    starts and stopped once the recording has ended); its exit status and output, as run_cli returns them."""
    return LiveCapture(load, (out, args), env=env, timeout=timeout).result()


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """``pmuprof ARGS`` in this process (no interpreter to start): its exit status and what it printed, as
    run_cli returns them; ``env`` is set for the call only. Exit statuses through a real process, signals and
    daemons need run_cli."""
    import contextlib
    import io

    from pmuprof.cli.main import main

    saved = {key: os.environ.get(key) for key in env or {}}
    out, err = io.StringIO(), io.StringIO()
    try:
        os.environ.update(env or {})
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([str(a) for a in args])
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return subprocess.CompletedProcess(["pmuprof", *args], code, out.getvalue(), err.getvalue())


def make_profile(
    stacks,
    run: dict | None = None,
    counters: dict | None = None,
    mysql: dict | None = None,
    analysis: dict | None = None,
    source: str = "",
) -> Profile:
    """A Profile from stacks and contract-shaped JSON facts (run.json, counters.json, mysql.json, analysis.json)."""
    return Profile(
        stacks,
        from_json(Run, run or {}),
        from_json(Counters, counters or {}),
        from_json(ServerFacts, mysql) if mysql is not None else None,
        from_json(Analysis, analysis or {}),
        source=source,
    )


def assert_host_load_and_thread_table(run_dir: Path) -> None:
    """A capture's report (HTML and Markdown) holds the host-load card and a CPU-by-thread (or state) table."""
    import re

    html = (run_dir / "report.html").read_text(encoding="utf-8")
    card = re.search(r'<div class="card" id="host-load">(.*?)</div>', html, re.S)
    assert card, "no host-load card in report.html"
    for label in ("load average", "run queue", "CPU", "context switches", "memory"):
        assert f"<dt>{label}</dt>" in card.group(1), (label, card.group(1))
    section = html[html.index('<section id="threads">') :] if '<section id="threads">' in html else ""
    assert re.search(r'data-table="(thread|state)"', section), "no thread table in report.html"
    assert re.search(r'<td data-v="[^"]+"><code>[^<]+</code></td><td class="num sec-n" data-v="[1-9]', section)
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    assert "- Host load during the capture: load average " in md and "run queue " in md
    assert re.search(r"^### CPU by (thread|processlist state and statement)$", md, re.M)
    assert re.search(r"^\| (thread|state) \| share \| function \| in group \|$", md, re.M)


def workload_verdict(run_dir: Path) -> dict:
    """The report's verdict rebuilt without the host rules (the suite's shared host may be saturated, and that
    finding would head it): what the workload's own stacks give the first screen."""
    from pmuprof.findings.engine import diagnose
    from pmuprof.findings.loader import load_rules
    from pmuprof.pipeline import profile_for_report
    from pmuprof.report import build_payload

    profile = profile_for_report(run_dir)
    return build_payload(profile, diagnose(profile, [r for r in load_rules() if r.id not in HOST_RULES])).verdict

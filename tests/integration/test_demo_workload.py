"""The demo workload: it builds, each scenario runs and stops cleanly, and real perf sees its frames."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from pmuprof.workflows.demo import SCENARIOS, build_demo, demo_argv, start_demo, stop_demo
from pmuprof.errors import UsageError
from pmuprof.model.perfscript import fold_lines
from pmuprof.paths import demo_source_dir

from helpers import cpus_held_while_recording, crowded, held_at_info

NAMED_FRAMES = (
    "ut_delay",
    "mutex_spin_wait",
    "fil_space_get",
    "btr_estimate_n_rows_in_range_on_level",
    "ha_innobase_records_in_range",
    "rw_lock_sx_lock_func",
    "buf_flush_page_cleaner_coordinator",
    "ut_time_ms",
    "buf_get_n_pending_read_ios",
    "os_rmb",
    "row_search_mvcc",
    "row_sel_store_mysql_rec",
)


@pytest.fixture(scope="module")
def demo_binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (shutil.which("gcc") or shutil.which("cc")):
        pytest.skip("gcc is not installed: apt-get install gcc libc6-dev")
    return build_demo(tmp_path_factory.mktemp("demo-cache"))


def _disassemble(binary: Path, function: str) -> str:
    if not shutil.which("objdump"):
        pytest.skip("objdump (binutils) is not installed")
    out = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", f"--disassemble={function}", str(binary)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.split(f"<{function}>:", 1)[1]


def test_build_is_cached_and_rebuilt_when_the_source_changes(demo_binary: Path, tmp_path: Path) -> None:
    again = build_demo(demo_binary.parent)
    assert again == demo_binary
    assert again.stat().st_mtime_ns == demo_binary.stat().st_mtime_ns  # no rebuild
    src = tmp_path / "src"
    shutil.copytree(demo_source_dir(), src)
    first = build_demo(tmp_path / "cache", src)
    before = first.stat().st_mtime_ns
    with (src / "pmuprof_demo.c").open("a") as f:
        f.write("\n/* changed */\n")
    assert build_demo(tmp_path / "cache", src).stat().st_mtime_ns != before
    assert not list(src.glob("pmuprof-demo*")), "the build must not write into the source directory"


def test_binary_has_real_pause_and_fence(demo_binary: Path) -> None:
    if os.uname().machine not in ("x86_64", "i686"):
        pytest.skip("PAUSE/MFENCE checks are x86-only")
    delay = _disassemble(demo_binary, "ut_delay")
    assert "pause" in delay
    after_pause = delay.split("pause", 1)[1].splitlines()[1]
    assert "ret" not in after_pause and "pop" not in after_pause  # the PAUSE's samples stay in the loop body
    rmb = _disassemble(demo_binary, "os_rmb")
    assert "mfence" in rmb and "push   %rbp" in rmb  # a real full fence, inside a frame


def test_bad_arguments_are_refused(demo_binary: Path) -> None:
    with pytest.raises(UsageError, match="scenario"):
        demo_argv(demo_binary, "nosuch", 4, 30, 1)
    with pytest.raises(UsageError, match="threads"):
        demo_argv(demo_binary, "mixed", 0, 30, 1)
    done = subprocess.run([str(demo_binary), "--scenario", "nosuch"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "unknown scenario" in done.stderr


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_scenario_runs_and_stops_on_sigterm(demo_binary: Path, scenario: str) -> None:
    proc = start_demo(scenario, threads=2, spin_wait_delay=6, seconds=0, binary=demo_binary)
    try:
        time.sleep(0.3)
        assert proc.poll() is None
        assert Path(f"/proc/{proc.pid}/comm").read_text().strip() == "pmuprof-demo"
    finally:
        code = stop_demo(proc, timeout=120)  # SIGKILL only after a hang detector's time: a loaded host is slow
    assert code == 0  # a clean exit from the SIGTERM handler, not a kill


def test_exits_by_itself_after_seconds(demo_binary: Path) -> None:
    proc = subprocess.run(
        [str(demo_binary), "--scenario", "healthy", "--threads", "1", "--seconds", "0.3"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0
    assert "scenario healthy" in proc.stdout and "stopped after" in proc.stdout


def test_no_orphan_when_the_parent_is_killed(demo_binary: Path) -> None:
    code = (
        "import sys, time; from pathlib import Path; from pmuprof.workflows.demo import start_demo; "
        f"p = start_demo('spin', 2, 6, 0, Path({str(demo_binary)!r})); print(p.pid, flush=True); time.sleep(60)"
    )
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
    try:
        pid = int(parent.stdout.readline())
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        parent.stdout.close()
    deadline = time.monotonic() + 120  # a hang detector: PDEATHSIG's SIGTERM ends it as soon as it runs
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.05)
    assert not _alive(pid), f"demo pid {pid} outlived its parent by 120 s"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


class DemoRuns:
    """Each scenario's ``pmuprof demo`` run (per-thread: perf record -p, 3 s at 999 Hz, its four threads at spin
    delay 30), made the first time a test asks for it: the findings tests read its findings.json, the perf tests
    real perf's recording in it (perf.data), so a scenario's workload runs once."""

    def __init__(self, binary: Path, base: Path) -> None:
        self.binary, self.base = binary, base
        self._done: dict[str, Path] = {}

    def get(self, scenario: str) -> Path:
        if scenario not in self._done:
            _require_perf()
            from pmuprof.workflows.demo import DemoOptions, run_demo

            out = self.base / scenario
            # per-thread (perf record -p) keeps post-processing to the workload's own samples: quick.
            opts = DemoOptions(
                scenario=scenario,
                duration=3,
                frequency=999,
                mode="per-thread",
                out_dir=out,
                cache_dir=self.binary.parent,
            )
            with cpus_held_while_recording(out):  # four threads flat out: one such load at a time
                result = run_demo(opts)
            assert result.workload_status == 0
            self._done[scenario] = out
        return self._done[scenario]


@pytest.fixture(scope="module")
def demo_runs(demo_binary: Path, tmp_path_factory: pytest.TempPathFactory) -> DemoRuns:
    return DemoRuns(demo_binary, tmp_path_factory.mktemp("demo-runs"))


def _perf_fold(demo_runs: DemoRuns, scenario: str) -> Counter:
    """The folded stacks (root first) of the workload's own code in the scenario's run, from perf script of the
    perf.data perf recorded (not pmuprof's folding).

    Samples taken in the kernel are left out: on a host whose other work keeps the workload's four threads
    waiting for a CPU, cpu-clock's samples land on the kernel's preemption path (irqentry_exit_to_user_mode,
    finish_task_switch: 44 % of 303 samples in a run beside the live tier), which is the host's load, not
    the workload's; ut_delay's share of all samples was 0.18 there, 0.32 of the workload's code."""
    import json

    run = demo_runs.get(scenario)
    pids = [t["pid"] for t in json.loads((run / "run.json").read_text())["targets"]]
    script = subprocess.run(
        ["perf", "script", "-i", str(run / "perf.data"), "-F", "comm,pid,tid,ip,sym,dso", "--no-inline"],
        capture_output=True,
        text=True,
        timeout=120,
        errors="replace",
    )
    folded = fold_lines(script.stdout.splitlines(), pids=pids).stacks
    stacks = Counter({stack: n for stack, n in folded.items() if not stack[-1].endswith("_[k]")})
    assert sum(stacks.values()) >= 50, f"too few samples of the workload's code: {sum(stacks.values())}"
    return stacks


def _share(stacks: Counter, leaf: str, under: str | None = None) -> float:
    """Fraction of samples whose leaf frame is ``leaf`` (and, if given, with ``under`` above it)."""
    total = sum(stacks.values())
    hit = sum(c for s, c in stacks.items() if s[-1] == leaf and (under is None or under in s[:-1]))
    return hit / total


def _inclusive(stacks: Counter, frame: str) -> float:
    return sum(c for s, c in stacks.items() if frame in s) / sum(stacks.values())


def test_perf_sees_ut_delay_under_fil_space_get_in_index_dive(demo_runs: DemoRuns) -> None:
    stacks = _perf_fold(demo_runs, "index-dive")
    # 0.52-0.54 of the workload's code on a quiet host, 0.25-0.46 beside six busy loops (its threads then seldom
    # run at once, so they seldom meet on the mutex); the spin scenario has none under fil_space_get (below)
    assert _share(stacks, "ut_delay") > 0.1
    assert _share(stacks, "ut_delay", "fil_space_get") >= 0.9 * _share(stacks, "ut_delay")
    chain = next(s for s in stacks if s[-1] == "ut_delay" and "fil_space_get" in s)
    order = [
        chain.index(f)
        for f in (
            "ha_innobase_records_in_range",
            "btr_estimate_n_rows_in_range_on_level",
            "fil_space_get",
            "mutex_spin_wait",
            "ut_delay",
        )
    ]
    assert order == sorted(order)
    assert _inclusive(stacks, "rw_lock_sx_lock_func") == 0


def test_perf_sees_flush_spin_without_index_dive(demo_runs: DemoRuns) -> None:
    stacks = _perf_fold(demo_runs, "spin")
    assert _share(stacks, "ut_delay", "rw_lock_sx_lock_func") > 0.2
    assert _inclusive(stacks, "buf_flush_page_cleaner_coordinator") > 0
    assert _inclusive(stacks, "fil_space_get") == 0


def test_perf_sees_full_fence_in_page_cleaner(demo_runs: DemoRuns) -> None:
    stacks = _perf_fold(demo_runs, "page-cleaner")
    assert _share(stacks, "os_rmb") > 0.3
    # most of it under its caller; samples on os_rmb's push and ret (where the frame-pointer walk skips the
    # caller) are ~25 % of them on a loaded VM (0.74 seen at load 5-8)
    assert _share(stacks, "os_rmb", "buf_get_n_pending_read_ios") >= 0.5 * _share(stacks, "os_rmb")
    assert _inclusive(stacks, "ut_time_ms") > 0
    assert _inclusive(stacks, "ut_delay") == 0


def test_perf_sees_only_scan_work_when_healthy(demo_runs: DemoRuns) -> None:
    stacks = _perf_fold(demo_runs, "healthy")
    assert _inclusive(stacks, "row_search_mvcc") > 0.8
    assert _inclusive(stacks, "ut_delay") == 0 and _inclusive(stacks, "os_rmb") == 0


def test_perf_sees_every_named_frame_in_mixed(demo_runs: DemoRuns) -> None:
    stacks = _perf_fold(demo_runs, "mixed")
    seen = {f for s in stacks for f in s}
    core = {"ut_delay", "fil_space_get", "rw_lock_sx_lock_func", "os_rmb", "row_search_mvcc"}
    assert core <= seen, f"missing {sorted(core - seen)}; named frames seen: {sorted(seen & set(NAMED_FRAMES))}"


# Issue 4: each scenario, captured live by `pmuprof demo`, gets the right findings. A rule
# that does not exist yet in rules/ is not demanded; a scenario none of whose rules exist skips.
# (must fire, must not fire, the verdict: the first finding nothing else explains)
EXPECTED = {
    "index-dive": (
        {"innodb-spin-wait", "fil-space-get-index-dive", "index-dive-cost"},
        set(),
        {"fil-space-get-index-dive", "index-dive-cost"},
    ),
    "spin": (
        {"innodb-spin-wait", "page-latch-contention"},
        {"fil-space-get-index-dive", "buffer-pool-lru"},
        {"page-latch-contention"},
    ),
    "page-cleaner": (
        {"memory-barrier-full-fence", "page-cleaner-busy-loop"},
        {"innodb-spin-wait"},
        {"memory-barrier-full-fence", "page-cleaner-busy-loop"},
    ),
    "mixed": (
        {"innodb-spin-wait", "fil-space-get-index-dive"},
        set(),
        {"fil-space-get-index-dive", "index-dive-cost", "page-latch-contention"},
    ),
}
# The other problem a scenario plants, which may lead on a crowded host: mixed's page cleaner never sleeps, while
# its dive threads block on their mutex once their spin rounds run out; with others taking 47 % of the CPU
# (runnable 11.7 on 2 CPUs) the cleaner's share, 0.27, passed the dives', 0.15 (seen in a whole-suite run).
CROWDED = {"mixed": {"page-cleaner-busy-loop", "memory-barrier-full-fence"}}


def _require_perf() -> None:
    if not shutil.which("perf"):
        pytest.skip("perf is not installed: apt-get install linux-perf")
    if os.geteuid() != 0 and Path("/proc/sys/kernel/perf_event_paranoid").read_text().strip() not in ("-1", "0"):
        pytest.skip("per-CPU perf sampling needs root or kernel.perf_event_paranoid <= 0")


def _raw(run_dir: Path) -> dict:
    import json

    return json.loads((run_dir / "findings.json").read_text())


def _findings(run_dir: Path) -> dict:
    from helpers import workload_findings

    return workload_findings(_raw(run_dir))


@pytest.mark.parametrize("scenario", sorted(EXPECTED))
def test_pmuprof_demo_gets_the_right_findings(demo_runs: DemoRuns, scenario: str) -> None:
    from pmuprof.paths import rules_dir

    present = {p.stem for p in rules_dir().glob("*.yaml")}
    wanted, unwanted, verdicts = EXPECTED[scenario]
    if not wanted & present:
        pytest.skip(f"none of {sorted(wanted)} is in rules/ yet")
    run = demo_runs.get(scenario)
    doc = _findings(run)
    fired = [f["rule"] for f in doc["findings"]]
    assert (wanted & present) <= set(fired), f"fired: {fired}"
    assert not (unwanted & set(fired)), f"fired: {fired}"
    top = next(f["rule"] for f in doc["findings"] if not f["explained_by"])
    if top not in verdicts and top in CROWDED.get(scenario, ()) and crowded(_raw(run)):
        # both problems are the scenario's: the one expected must still follow, at warning or above
        follows = next(f for f in doc["findings"] if not f["explained_by"] and f["rule"] not in CROWDED[scenario])
        print(f"crowded host: {top} leads, then {follows['rule']} ({follows['severity']})")
        assert follows["rule"] in verdicts and follows["severity"] != "info", f"fired: {fired}"
        return
    assert top in verdicts, f"verdict {top!r}, expected one of {sorted(verdicts)}; fired: {fired}"
    if doc["profile"]["samples"] >= 200:  # below that the engine caps severity at info (a starved CPU)
        first = doc["findings"][0]
        assert first["severity"] in ("warning", "critical") or held_at_info(first), first


def test_pmuprof_demo_healthy_gives_no_warning(
    demo_binary: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI end to end, with the default per-CPU capture (and its own build cache)."""
    from pmuprof.cli.main import main

    _require_perf()
    monkeypatch.setenv("PMUPROF_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    with cpus_held_while_recording(out):
        assert main(["demo", "--scenario", "healthy", "--duration", "2", "-F", "499", "-q", "-o", str(out)]) == 0
    doc = _findings(out)
    loud = [f["rule"] for f in doc["findings"] if f["severity"] in ("warning", "critical")]
    assert not loud, f"a healthy scan must not warn: {loud}"
    assert (tmp_path / "run" / "report.html").is_file() and (tmp_path / "run" / "stacks.folded").is_file()
    from helpers import workload_verdict

    busy = workload_verdict(out)["busy"]  # issue 23 item 4: the scan's function, not start_thread or a kernel frame
    # the path goes into the scan: row_search_mvcc, or whichever of its two callees (about half of its samples
    # each) holds the hot-path share in this capture's samples (few, on a loaded host: either can)
    scan = ("row_search_mvcc", "row_sel_store_mysql_rec", "page_cur_move_to_next")
    assert busy["function"] == "JOIN_exec" and busy["path_end"] in scan, busy

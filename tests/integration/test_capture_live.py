"""Real perf on a real process: capture, the same report from every input, Ctrl-C, exiting targets."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from datetime import datetime

import pytest

from helpers import REPO, build_busy, need_perf, run_cli, spawn_named, spinning


@pytest.fixture(scope="module")
def run_dir(busy_process, tmp_path_factory):
    out = tmp_path_factory.mktemp("cap") / "run"
    with spinning(busy_process) as busy:
        res = run_cli("capture", "-p", str(busy.pid), "-d", "3", "-F", "199", "-o", str(out), "--no-mysql")
    assert res.returncode == 0, res.stderr
    return out


HOST_ONLY = {"host-saturated"}  # reads run.json's host load, which a bare perf script text does not carry


def _top(findings_json: str) -> dict:
    data = json.loads(findings_json)
    return {
        "samples": data["profile"]["samples"],
        "rules": [f["rule"] for f in data["findings"] if f["rule"] not in HOST_ONLY],
    }


def test_capture_writes_the_run_directory_contract(run_dir, busy_process):
    for name in ("run.json", "stacks.folded", "report.html", "findings.json", "counters.json", "perf.data"):
        assert (run_dir / name).is_file(), name
    run = json.loads((run_dir / "run.json").read_text())
    assert run["record"]["event_requested"] == "cycles"
    assert run["record"]["event_recorded"] in ("cycles", "cpu-clock")
    assert run["mode"] == "per-cpu" and run["targets"][0]["pid"] == busy_process.pid
    stacks = (run_dir / "stacks.folded").read_text()
    assert "pmuprof-busy;" in stacks and "hot_leaf" in stacks
    html = (run_dir / "report.html").read_text()
    assert "hot_leaf" in html and "<script src=" not in html and "<link " not in html


def test_no_keep_perf_data_deletes_it_once_folded(busy, tmp_path):
    """--no-keep-perf-data: the report is made from perf.data (the target's frames, by address), which is deleted
    afterwards with nothing kept for re-reading it elsewhere; the run directory still gives a report later, from
    its folded stacks. (perf.data was once deleted before folding: every such capture said it recorded nothing.)"""
    out = tmp_path / "run"
    res = run_cli("capture", "-p", str(busy.pid), "-d", "2", "--no-mysql", "--no-keep-perf-data", "-o", str(out))
    assert res.returncode == 0, res.stderr
    assert "hot_leaf" in (out / "stacks.folded").read_text() and (out / "analysis.json").is_file()
    left = {"perf.data", "binaries.tar.gz", "kallsyms.gz"} & {p.name for p in out.iterdir()}
    assert not left, left
    again = run_cli("report", str(out), "-o", str(tmp_path / "again"))
    assert again.returncode == 0, again.stderr
    assert "hot_leaf" in (tmp_path / "again" / "report.html").read_text()


def test_seconds_strip_is_on_the_host_wall_clock(run_dir):
    """run.json's clock pair puts perf's sample seconds on the wall clock: the strip's first second (a whole
    second of perf's clock, so up to 1 s before the first sample) starts after the pair was read, before perf
    started, and the strip ends about when the capture did."""
    run = json.loads((run_dir / "run.json").read_text())
    assert set(run["clock"]) == {"monotonic_s", "epoch_s", "utc_offset_s", "zone"}
    assert run["clock"]["utc_offset_s"] == time.localtime(run["clock"]["epoch_s"]).tm_gmtoff
    html = (run_dir / "report.html").read_text()
    data = json.loads(re.search(r'<script type="application/json" id="pmuprof-data">(.*?)</script>', html, re.S)[1])
    clock, started = data["seconds"]["clock"], datetime.fromisoformat(run["started"].replace("Z", "+00:00"))
    assert clock["exact"] is True
    assert -1 < clock["t0"] - run["clock"]["epoch_s"] < 30  # perf's start-up on a busy host
    assert int(run["clock"]["epoch_s"]) == started.timestamp()  # `started` is the same instant, in whole seconds
    assert abs(clock["t0"] + len(data["seconds"]["n"]) - (started.timestamp() + run["duration_s"])) < 30


def test_same_report_from_rundir_perf_data_and_script_text(run_dir, tmp_path):
    from_dir = _top(run_cli("report", str(run_dir), "--json").stdout)
    from_data = _top(run_cli("report", str(run_dir / "perf.data"), "--json").stdout)
    text = tmp_path / "script.txt"
    with open(text, "w") as fh:  # with the pid: perf script's default fields carry only the thread id
        subprocess.run(
            ["perf", "script", "-i", str(run_dir / "perf.data"), "-F", "comm,pid,tid,ip,sym,dso"],
            stdout=fh,
            check=True,
            stderr=subprocess.DEVNULL,
        )
    from_text = _top(
        run_cli(
            "report",
            str(text),
            "--pid",
            str(json.loads((run_dir / "run.json").read_text())["targets"][0]["pid"]),
            "--json",
        ).stdout
    )
    assert from_dir == from_data == from_text and from_dir["samples"] > 0


def test_ctrl_c_keeps_what_was_captured_and_leaves_no_perf(busy, tmp_path):
    out = tmp_path / "int"
    env = {"PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pmuprof", "record", "-p", str(busy.pid), "-d", "60", "-o", str(out), "--no-mysql"],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 600  # a hang detector: perf record -a can take long to start on a loaded host
    while not (out / "perf.data").exists():  # recording has started
        assert proc.poll() is None and time.monotonic() < deadline, "perf never created its file"
        time.sleep(0.2)
    time.sleep(2)
    tracer = [line for line in open(f"/proc/{busy.pid}/status") if line.startswith("TracerPid")]
    assert tracer == ["TracerPid:\t0\n"], "the target must never be ptraced"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=900)
    assert proc.returncode == 130, err  # docs/usage.md exit codes: Ctrl-C is 130, after the run directory is complete
    run = json.loads((out / "run.json").read_text())
    assert run["interrupted"] and run["duration_s"] < 60  # Ctrl-C, not the 60 s clock, ended it
    assert "hot_leaf" in (out / "stacks.folded").read_text()
    left = subprocess.run(["pgrep", "-f", str(out)], capture_output=True, text=True).stdout
    assert not left.strip(), "perf was left running"


def test_target_exiting_mid_capture_is_reported(tmp_path):
    """The target exits one second into the window (the window's own clock: perf may take long to start)."""
    from pmuprof.capture.record import RecordOptions, record
    from pmuprof.pipeline import report_run

    need_perf()
    exe = build_busy(tmp_path)
    short = spawn_named([str(exe)])  # busy until it is ended
    out = tmp_path / "gone"

    def end_it(elapsed: float, _duration: float, _size: int) -> None:
        if elapsed >= 1.0 and short.poll() is None:
            short.kill()
            short.wait()

    try:
        record(RecordOptions(pids=(short.pid,), out_dir=out, duration=60, mysql=False), end_it)
    finally:
        if short.poll() is None:
            short.kill()
            short.wait()
    report_run(out)
    run = json.loads((out / "run.json").read_text())
    assert run["duration_s"] < 45 and any("exited during the capture" in w for w in run["warnings"])
    assert (out / "report.html").is_file()


def test_idle_target_still_gets_a_report_that_says_so(tmp_path):
    need_perf()
    idle = subprocess.Popen(["sleep", "120"])
    try:
        res = run_cli("capture", "-p", str(idle.pid), "-d", "2", "-o", str(tmp_path / "idle"), "--no-mysql")
    finally:
        idle.kill()
        idle.wait()
    assert res.returncode == 0, res.stderr
    assert "no samples of the target" in res.stderr
    data = json.loads((tmp_path / "idle" / "findings.json").read_text())
    assert data["profile"]["samples"] == 0 and data["findings"] == []
    assert "idle (or off-CPU)" in (tmp_path / "idle" / "report.md").read_text()


def test_truncated_perf_data_gives_one_clear_line(run_dir, tmp_path):
    data = (run_dir / "perf.data").read_bytes()
    cut = tmp_path / "cut.data"
    cut.write_bytes(data[: len(data) // 2])
    res = run_cli("report", str(cut), "-o", str(tmp_path / "out"))
    if res.returncode == 0:  # perf read the first half: the samples it could read were kept
        assert (tmp_path / "out" / "report.html").is_file()
        return
    assert res.returncode == 3 and res.stderr.startswith("pmuprof: error:") and "re-record" in res.stderr


HOSTILE_C = r"""
#define EVIL "\"evil</script><img src=x onerror=alert(1)>&amp;\""
volatile long sink;
__asm__(".text\n.globl " EVIL "\n.type " EVIL ", @function\n" EVIL ":\n"
        "  push %rbp\n  mov %rsp, %rbp\n  mov $300000, %ecx\n"
        "1: add %rcx, sink(%rip)\n  dec %rcx\n  jnz 1b\n  pop %rbp\n  ret\n"
        ".size " EVIL ", .-" EVIL "\n");
__attribute__((noinline)) void caller(void) { __asm__ volatile("call " EVIL ::: "rcx", "memory"); }
int main(void) { for (;;) caller(); }
"""


def test_hostile_symbol_names_from_real_perf_render_as_text(tmp_path):
    need_perf()
    src, exe = tmp_path / "evil.c", tmp_path / "pmuprof-evil"
    src.write_text(HOSTILE_C)
    built = subprocess.run(
        ["gcc", "-O1", "-fno-omit-frame-pointer", "-o", str(exe), str(src)], capture_output=True, text=True
    )
    if built.returncode != 0:
        pytest.skip(f"this assembler rejects the quoted symbol name: {built.stderr.strip()[:120]}")
    proc = subprocess.Popen([str(exe)])
    try:
        res = run_cli("capture", "-p", str(proc.pid), "-d", "2", "-F", "499", "-o", str(tmp_path / "r"), "--no-mysql")
    finally:
        proc.kill()
        proc.wait()
    assert res.returncode == 0, res.stderr
    assert "evil</script>" in (tmp_path / "r" / "stacks.folded").read_text()
    html = (tmp_path / "r" / "report.html").read_text()
    assert "<img src=x" not in html and "</script><img" not in html


def test_cgroup_filter_refused_by_perf_falls_back_to_all_cpus(busy, tmp_path, monkeypatch):
    """Real perf refusing `-G` (here: a cgroup that does not exist) must not lose the capture."""
    from pmuprof.capture import record as rec
    from pmuprof.pipeline import materialize

    monkeypatch.setattr(rec, "_shared_cgroup", lambda targets: "pmuprof-test-missing.service")
    out = rec.record(rec.RecordOptions(pids=(busy.pid,), out_dir=tmp_path / "cg", duration=2, mysql=False))
    run = json.loads((out / "run.json").read_text())
    assert any("sampled without the cgroup filter" in w for w in run["warnings"]), run["warnings"]
    assert run["cgroup"] is None and "-G" not in run["record"]["argv"]
    materialize(out)
    assert "hot_leaf" in (out / "stacks.folded").read_text()

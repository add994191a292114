"""Unattended runs end to end with the fake perf: capture --json/--textfile/--notify-cmd, -h as the MySQL
host, and watch --daemonize with its pid and log files."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

from helpers import FAKE_PERF, REPO, cli, run_cli


def _notify_script(tmp_path: Path) -> Path:
    script = tmp_path / "notify"
    script.write_text(
        '#!/bin/sh\nprintf "%s\\n" "$@" > "$(dirname "$0")/notified.txt"\n'
        'echo "$PMUPROF_EXIT_CODE" >> "$(dirname "$0")/notified.txt"\necho sent\n'
    )
    script.chmod(0o755)
    return script


def _metrics(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            out[key] = value
    return out


def test_capture_json_textfile_and_notify(target, tmp_path):
    out, prom, script = tmp_path / "run", tmp_path / "pmuprof.prom", _notify_script(tmp_path)
    res = cli(
        "capture",
        "-p",
        str(target.pid),
        "-d",
        "1s",
        "--no-mysql",
        "-q",
        "-o",
        str(out),
        "--json",
        "--exit-code-on-findings",
        "--textfile",
        str(prom),
        "--notify-cmd",
        f"{script} --queue dba",
        env=FAKE_PERF,
    )
    assert res.returncode in (10, 20), res.stderr
    summary = json.loads(res.stdout)
    assert summary["run_dir"] == str(out) and summary["exit_code"] == res.returncode
    assert summary["samples"] > 0 and summary["files"]["html"] == str(out / "report.html")
    assert summary["verdict"].startswith(("CRITICAL", "WARNING"))
    rules = {f["rule"] for f in summary["findings"]}
    assert {"innodb-spin-wait", "fil-space-get-index-dive"} <= rules
    metrics = _metrics(prom)
    host = socket.gethostname()
    assert metrics[f'pmuprof_last_run_exit_code{{host="{host}",source="pmuprof"}}'] == str(res.returncode)
    shares = {
        k: v for k, v in metrics.items() if k.startswith("pmuprof_finding_share_ratio{") and "innodb-spin-wait" in k
    }
    assert len(shares) == 1 and 0 < float(next(iter(shares.values()))) <= 1
    assert any(k.startswith("pmuprof_samples{") for k in metrics)
    notified = (tmp_path / "notified.txt").read_text().splitlines()
    assert notified[:2] == ["--queue", "dba"] and notified[2] == summary["verdict"]
    assert notified[3] == str(out / "report.html") and notified[4] == str(res.returncode)
    assert "notify: " in res.stderr and "exit 0: sent" in res.stderr


def test_a_failed_capture_updates_the_textfile_with_its_exit_code(target, tmp_path):
    prom = tmp_path / "pmuprof.prom"
    res = cli(
        "capture",
        "-p",
        str(target.pid),
        "-d",
        "1",
        "--no-mysql",
        "-q",
        "-o",
        str(tmp_path / "r"),
        "--textfile",
        str(prom),
        env={**FAKE_PERF, "FAKEPERF_MODE": "fail-record"},
    )
    assert res.returncode == 5
    metrics, labels = _metrics(prom), f'{{host="{socket.gethostname()}",source="pmuprof"}}'
    assert metrics[f"pmuprof_last_run_exit_code{labels}"] == "5" and metrics[f"pmuprof_last_run_failed{labels}"] == "1"
    assert not any(k.startswith("pmuprof_findings") for k in metrics)  # a failed run is not a clean one


def test_textfile_env_and_a_bad_textfile_refused_before_capturing(target, tmp_path):
    res = cli(
        "capture",
        "-p",
        str(target.pid),
        "-d",
        "1",
        "--no-mysql",
        "-q",
        "-o",
        str(tmp_path / "r"),
        env={**FAKE_PERF, "PMUPROF_TEXTFILE": str(tmp_path / "nodir" / "x.prom")},
    )
    assert res.returncode == 2 and "not a writable directory" in res.stderr
    assert not (tmp_path / "r").exists()


def test_dash_h_is_the_mysql_host(target, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    res = cli(
        "capture",
        "-p",
        str(target.pid),
        "-h",
        "127.0.0.1",
        "-P",
        str(port),
        "-u",
        "nobody",
        "-d",
        "1",
        "-q",
        "-o",
        str(tmp_path / "run"),
        env=FAKE_PERF,
    )
    assert res.returncode == 0, res.stderr  # it captured: -h did not print help
    facts = json.loads((tmp_path / "run" / "mysql.json").read_text())
    assert facts["reachable"] is False and f"127.0.0.1:{port}" in facts["error"]


def _daemon(target, tmp_path: Path, trigger: str, *extra: str) -> tuple[int, Path, Path]:
    pid_file, log_file = tmp_path / "watch.pid", tmp_path / "watch.log"
    res = run_cli(
        "watch",
        "-p",
        str(target.pid),
        "-t",
        trigger,
        "--cycles",
        "1",
        "--interval",
        "200ms",
        "-d",
        "1s",
        "--max-captures",
        "1",
        "--no-mysql",
        "-o",
        str(tmp_path / "stalk"),
        "--daemonize",
        "--pid-file",
        str(pid_file),
        "--log-file",
        str(log_file),
        *extra,
        env=FAKE_PERF,
    )
    assert res.returncode == 0, res.stderr
    assert "in the background as pid" in res.stderr  # the parent returned (and said where the daemon is)
    return int(res.stderr.split("as pid ")[1].split(";")[0]), pid_file, log_file


def _gone(pid_file: Path, seconds: float = 600) -> bool:  # a hang detector: a loaded host is slow
    for _ in range(int(seconds / 0.2)):
        if not pid_file.exists():
            return True
        time.sleep(0.2)
    return False


def test_watch_daemon_holds_its_pid_file_and_stops_on_sigterm(target, tmp_path):
    daemon_pid, pid_file, log_file = _daemon(target, tmp_path, "cpu>100000")
    # the parent returned while its daemon, whose trigger never holds, runs on: it did not wait for it (a bound
    # on the parent's time said the same, and failed on a loaded host: 35 s at load average ~40)
    assert not _exited(daemon_pid, seconds=0)
    assert pid_file.read_text().strip() == str(daemon_pid)
    again = run_cli(
        "watch",
        "-p",
        str(target.pid),
        "-t",
        "cpu>1",
        "--no-mysql",
        "--daemonize",
        "--pid-file",
        str(pid_file),
        "--log-file",
        str(tmp_path / "other.log"),
        env=FAKE_PERF,
    )
    assert again.returncode == 2 and f"already runs as pid {daemon_pid}" in again.stderr
    os.kill(daemon_pid, 15)
    assert _gone(pid_file), log_file.read_text()  # removed on the way out
    log = log_file.read_text()
    assert "watch stopped by SIGTERM" in log and "0 capture(s)" in log  # the signal it was, not "SIGINT"
    assert all(
        line.startswith(("pmuprof: 20", "pmuprof: error:")) for line in log.splitlines()
    )  # stamped, or the exit line


def test_watch_daemon_captures_reports_and_exits(target, tmp_path):
    prom = tmp_path / "watch.prom"
    daemon_pid, pid_file, log_file = _daemon(target, tmp_path, "cpu>=0", "--textfile", str(prom))
    assert _gone(pid_file), log_file.read_text()
    log = log_file.read_text()
    assert "trigger cpu>=0 held for 1 polls" in log and "1 capture(s)" in log
    runs = [p for p in (tmp_path / "stalk").iterdir() if p.is_dir()]
    assert len(runs) == 1 and (runs[0] / "report.html").is_file()
    assert "pmuprof_finding_share_ratio" in prom.read_text()
    assert _exited(daemon_pid)


def _exited(pid: int, seconds: float = 600) -> bool:
    """Gone, or a zombie waiting for whoever adopted it (the daemon is not our child); ``seconds``: a hang
    detector (0: now)."""
    for _ in range(max(1, int(seconds / 0.2))):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state == "Z":
            return True
        time.sleep(0.2)
    return False


def test_daemonize_needs_a_log_file(target, tmp_path):
    res = cli("watch", "-p", str(target.pid), "-t", "cpu>1", "--no-mysql", "--daemonize", env=FAKE_PERF)
    assert res.returncode == 2 and "--log-file" in res.stderr


def test_a_capture_cut_short_by_sigterm_is_published_as_failed(tmp_path, monkeypatch, capsys):
    """The report is written, but the run was stopped: exit 143, and the metrics say failed, not clean."""
    import shutil

    from pmuprof import pipeline
    from pmuprof.analysis.load import load
    from pmuprof.cli import capture as capture_cli, common
    from pmuprof.cli.main import main

    run = tmp_path / "run"
    shutil.copytree(REPO / "examples" / "demo-output" / "mixed", run)
    meta = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**meta, "stopped_by": "SIGTERM"}))
    monkeypatch.setattr(common, "recorded", lambda opts, quiet: run)  # as if perf had been stopped by SIGTERM
    monkeypatch.setattr(
        capture_cli,
        "report_run",  # its folded stacks, no perf.data
        lambda out, rules, log, keep_perf_data: pipeline.report_profile(load(out), out, rules),
    )
    prom = tmp_path / "pmuprof.prom"
    code = main(
        [
            "capture",
            "-p",
            str(os.getpid()),
            "-d",
            "1",
            "--no-mysql",
            "-q",
            "-o",
            str(tmp_path / "unused"),
            "--textfile",
            str(prom),
            "--exit-code-on-findings",
        ]
    )
    assert code == 143 and "capture stopped by SIGTERM" in capsys.readouterr().err
    metrics = {k.split("{")[0]: v for k, v in _metrics(prom).items()}
    assert metrics["pmuprof_last_run_exit_code"] == "143" and metrics["pmuprof_last_run_failed"] == "1"
    assert "pmuprof_findings" not in metrics and "pmuprof_samples" in metrics  # its samples, not a clean verdict

"""A real node_exporter (Debian's prometheus-node-exporter) with only the textfile collector reads what
`pmuprof capture --textfile` wrote; label values with quotes, backslashes and newlines survive its parser."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
import urllib.request

import pytest

from helpers import FAKE_PERF, run_cli
from pmuprof.model.profile import Profile
from pmuprof.report.metrics import RunMetrics, render_metrics
from pmuprof.workflows.fleet import write_textfile

NASTY = 'std::map<K, "V">::at\\x\nnext'


def _exporter() -> str:
    for name in ("prometheus-node-exporter", "node_exporter"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("node_exporter is not installed (apt-get install prometheus-node-exporter)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def node_exporter(tmp_path):
    """node_exporter on a loopback port, every collector off but textfile, pointed at a temp dir."""
    textdir = tmp_path / "textfile"
    textdir.mkdir()
    port = _free_port()
    proc = subprocess.Popen(
        [
            _exporter(),
            f"--web.listen-address=127.0.0.1:{port}",
            "--collector.disable-defaults",
            "--collector.textfile",
            f"--collector.textfile.directory={textdir}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(url, timeout=2).read()
                break
            except OSError:
                if proc.poll() is not None:
                    pytest.fail(f"node_exporter exited: {proc.stderr.read().decode()[-500:]}")
                time.sleep(0.1)
        yield textdir, url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _scrape(url: str) -> str:
    return urllib.request.urlopen(url, timeout=5).read().decode()


def _samples(text: str, name: str) -> list[tuple[dict[str, str], float]]:
    out = []
    for line in text.splitlines():
        if line.startswith(name + "{"):
            labels_text, value = line[len(name) + 1 :].rsplit("} ", 1)
            labels = {
                k: v.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
                for k, v in re.findall(r'([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"', labels_text)
            }
            out.append((labels, float(value)))
    return out


def test_node_exporter_serves_the_metrics_of_a_capture(node_exporter, target, tmp_path):
    textdir, url = node_exporter
    res = run_cli(
        "capture",
        "-p",
        str(target.pid),
        "-d",
        "1",
        "--no-mysql",
        "-q",
        "-o",
        str(tmp_path / "run"),
        "--exit-code-on-findings",
        "--textfile",
        str(textdir / "pmuprof.prom"),
        env=FAKE_PERF,
    )
    assert res.returncode in (10, 20), res.stderr
    text = _scrape(url)
    errors = _samples(text, "node_textfile_scrape_error")
    assert errors == [] or all(v == 0 for _, v in errors), text[-2000:]
    assert re.search(r"^node_textfile_scrape_error 0$", text, re.M), text[-2000:]
    host = socket.gethostname()
    code = _samples(text, "pmuprof_last_run_exit_code")
    assert code == [({"host": host, "source": "pmuprof"}, float(res.returncode))]
    shares = {labels["rule"]: value for labels, value in _samples(text, "pmuprof_finding_share_ratio")}
    assert shares.get("innodb-spin-wait", 0) > 0 and all(0 <= v <= 1 for v in shares.values())
    samples = _samples(text, "pmuprof_samples")
    assert samples and all(
        labels["host"] == host and labels["server"] and "exported_instance" not in labels for labels, _ in samples
    )
    funcs = _samples(text, "pmuprof_top_function_self_share_ratio")
    assert funcs and sum(v for _, v in funcs) <= 1.0 + 1e-9
    names = {labels["rank"]: labels["function"] for labels, _ in _samples(text, "pmuprof_top_function_info")}
    assert set(names) == {labels["rank"] for labels, _ in funcs} and all(names.values())
    stamp = _samples(text, "pmuprof_last_run_timestamp_seconds")[0][1]
    assert abs(stamp - time.time()) < 600
    assert _samples(text, "pmuprof_last_success_timestamp_seconds")[0][1] == stamp
    assert _samples(text, "pmuprof_last_run_failed")[0][1] == 0


def test_node_exporter_serves_a_failed_run_as_failed(node_exporter, tmp_path):
    """perf refuses: exit 5, pmuprof_last_run_failed 1, no findings gauge, and node_exporter parses it."""
    textdir, url = node_exporter
    res = run_cli(
        "capture",
        "-p",
        str(os.getpid()),
        "-d",
        "1",
        "--no-mysql",
        "-q",
        "-o",
        str(tmp_path / "run"),
        "--textfile",
        str(textdir / "nightly.prom"),
        env={**FAKE_PERF, "FAKEPERF_MODE": "fail-record"},
    )
    assert res.returncode == 5, res.stderr
    text = _scrape(url)
    assert re.search(r"^node_textfile_scrape_error 0$", text, re.M), text[-2000:]
    assert [v for labels, v in _samples(text, "pmuprof_last_run_failed") if labels["source"] == "nightly"] == [1.0]
    assert not _samples(text, "pmuprof_findings") and not _samples(text, "pmuprof_last_success_timestamp_seconds")


def test_hostile_label_values_survive_node_exporters_parser(node_exporter):
    textdir, url = node_exporter
    profile = Profile({("mariadbd", "start_thread", NASTY): 7, ("mariadbd", "start_thread", "ok"): 3})
    write_textfile(textdir / "hostile.prom", render_metrics(RunMetrics('db"1\\', "hostile", 1.0, 0, profile)))
    text = _scrape(url)
    assert re.search(r"^node_textfile_scrape_error 0$", text, re.M), text[-2000:]
    names = {labels["function"] for labels, _ in _samples(text, "pmuprof_top_function_info")}
    assert NASTY in names and "ok" in names
    assert {labels["host"] for labels, _ in _samples(text, "pmuprof_samples")} == {'db"1\\'}
    # and node_exporter does reject a broken file, so the check above can fail
    (textdir / "broken.prom").write_text('pmuprof_bad{x="unterminated} 1\n')
    assert re.search(r"^node_textfile_scrape_error 1$", _scrape(url), re.M)

"""A system-wide perf.data with two processes named mysqld: reported apart by pid, the rest listed as left out."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from helpers import need_perf, run_cli

# A busy process whose main thread is named NAME (as `comm` shows it), for SECONDS.
_BUSY = """
import sys, time
open("/proc/self/comm", "w").write(sys.argv[1])
end = time.time() + float(sys.argv[2])
while time.time() < end:
    pass
"""


def _busy(name: str, seconds: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", _BUSY, name, str(seconds)])


def test_two_mysqld_processes_stay_apart_and_the_others_are_named(tmp_path: Path):
    perf = need_perf()
    procs = [_busy("mysqld", 4), _busy("mysqld", 4), _busy("notmysql", 4)]
    try:
        data = tmp_path / "perf.data"
        rec = subprocess.run(
            [perf, "record", "-a", "-g", "-F", "199", "-o", str(data), "--", "sleep", "3"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert rec.returncode == 0, rec.stderr
    finally:
        for p in procs:
            p.kill()
            p.wait()
    out = tmp_path / "out"
    res = run_cli("report", str(data), "-o", str(out))
    assert res.returncode == 0, res.stderr
    profile = json.loads((out / "findings.json").read_text())["profile"]
    assert {procs[0].pid, procs[1].pid} <= set(profile["pids"])  # never one "mysqld" merged by name
    assert procs[2].pid not in profile["pids"]
    assert {f"mysqld-{procs[0].pid}", f"mysqld-{procs[1].pid}"} <= set(profile["processes"])
    md = (out / "report.md").read_text()
    line = next(x for x in md.splitlines() if x.startswith("- Processes:"))
    assert "samples of other processes left out" in line and "--pid" in line
    html = (out / "report.html").read_text()  # the 20 largest left out are listed there
    assert f"<code>notmysql</code> pid {procs[2].pid} " in html

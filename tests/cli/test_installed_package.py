"""The package works installed (templates, rules, demo source, native binaries inside it), not only from a checkout."""

from __future__ import annotations

import os
import subprocess
import sys

from shared import wheel


def test_installed_copy_finds_its_own_resources_and_reports(tmp_path, tmp_path_factory):
    target = tmp_path / "site"
    pip = subprocess.run(  # the run's wheel of this checkout (tests/shared.py), as `pip install .` builds it
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(target),
            str(wheel(tmp_path_factory, native=True)),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert pip.returncode == 0, pip.stderr
    env = {**os.environ, "PYTHONPATH": str(target)}
    where = subprocess.run(
        [
            sys.executable,
            "-c",
            "import pmuprof.paths as p; print(p.templates_dir()); print(p.rules_dir()); print(p.demo_source_dir())",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert all(line.startswith(str(target)) for line in where.stdout.split()), where.stdout
    folded = tmp_path / "s.folded"
    folded.write_text("mysqld;start_thread;fil_space_get;ut_delay 300\nmysqld;start_thread;row_search_mvcc 100\n")
    res = subprocess.run(
        [sys.executable, "-m", "pmuprof", "report", str(folded), "-o", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr
    assert "ut_delay" in (tmp_path / "out" / "report.html").read_text()
    rules = subprocess.run(
        [sys.executable, "-m", "pmuprof", "rules", "list"], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert "innodb-spin-wait" in rules.stdout

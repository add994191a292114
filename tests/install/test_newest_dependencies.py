"""pmuprof on the newest dependencies pyproject.toml allows, fetched fresh from the package index on each run:
the generated docs (man page, CLI reference) are the committed ones there too, and the tests of the CLI, the
metrics and the stacks pass on them. The test box's own suite runs on the versions it has (click 8.4 when
this was written); the .deb test runs a capture on Debian 12's (click 8.1.3, numpy 1.24)."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys

import pytest

from .doccmds import REPO

pytestmark = pytest.mark.newest_deps
# The suite's tests that read the CLI definitions (click), the metrics writer and the stacks (numpy). tests/unit,
# tests/rules and tests/cli ran on these versions once (click 8.5.1, numpy 2.4.6, Jinja2 3.1.6, PyYAML 6.0.4,
# PyMySQL 1.2.4: 1115 of 1116 passed, the other a README link to a section written later), in 21 min on the
# loaded test box: too long for every run.
TESTS = ("tests/unit/test_cli_conventions.py", "tests/unit/test_cli_doc.py", "tests/unit/test_fleet_metrics.py")
TESTS += ("tests/unit/test_stacks.py",)


def _requirements() -> list[str]:
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    runtime = ast.literal_eval(re.search(r"^dependencies = (\[.*\])$", text, re.M).group(1))
    test = ast.literal_eval(re.search(r"^test = (\[.*\])$", text, re.M).group(1))
    return runtime + test


@pytest.fixture(scope="module")
def newest(tmp_path_factory):
    """A venv holding the newest release of every dependency within pyproject.toml's ranges."""
    venv = tmp_path_factory.mktemp("newest") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check"]
    got = subprocess.run(
        [*pip, "install", "-q", "--upgrade", "--upgrade-strategy", "eager", "--no-cache-dir", *_requirements()],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if got.returncode != 0:
        pytest.skip(f"the package index is unreachable: {got.stderr.strip()[-300:]}")
    listed = subprocess.run([*pip, "list", "--format=json"], capture_output=True, text=True, check=True)
    versions = {d["name"].lower(): d["version"] for d in json.loads(listed.stdout)}
    print("newest allowed:", versions)  # in the log of every run: which versions were tested
    return venv / "bin" / "python", versions


def _run(python, *argv: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([str(python), *argv], env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("argv, doc", [(("man",), "docs/pmuprof.1"), (("man", "--markdown"), "docs/cli.md")])
def test_generated_docs_are_the_committed_ones_on_the_newest_versions(newest, argv, doc):
    python, versions = newest
    made = _run(python, "-m", "pmuprof", *argv)
    assert made.returncode == 0, made.stderr
    assert made.stdout == (REPO / doc).read_text(encoding="utf-8"), f"{doc} differs under click {versions['click']}"


def test_the_cli_metrics_and_stacks_tests_pass_on_the_newest_versions(newest):
    python, versions = newest
    done = _run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *TESTS, timeout=1800)
    assert done.returncode == 0, f"{versions}\n{done.stdout[-4000:]}"

"""The types: mypy over the package with pyproject.toml's settings (its defaults everywhere, --strict's checks on
model/, findings/ and report/), and mypy --strict itself on those three."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
STRICT = ("pmuprof/model", "pmuprof/findings", "pmuprof/report")


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One mypy cache for both runs (each is a few seconds warm, ten or more cold), outside the tree."""
    return tmp_path_factory.mktemp("mypy-cache")


def _mypy(cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(cache), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert "No module named mypy" not in done.stderr, "mypy is missing: pip install -e '.[test]'"
    return done


def test_mypy_passes_on_the_package(cache: Path) -> None:
    done = _mypy(cache)  # files and flags from pyproject.toml [tool.mypy]
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_strict_passes_on_model_findings_and_report(cache: Path) -> None:
    """The same claim as the overrides in pyproject.toml, made by --strict itself (the modules these import
    are read, their own errors are the first test's)."""
    done = _mypy(cache, "--strict", "--follow-imports=silent", *STRICT)
    assert done.returncode == 0, done.stdout + done.stderr

"""The types: mypy over the package with pyproject.toml's settings (its defaults everywhere, --strict's checks on
model/, findings/ and report/), and those checks being every one mypy --strict enables."""

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


def _strict_flags() -> set[str]:
    """The flags ``mypy --strict`` turns on in the installed mypy, as pyproject.toml's keys (``--no-implicit-reexport``
    is ``implicit_reexport = false``)."""
    done = _mypy_help()
    text = " ".join(done.split())
    listed = text.split("Strict mode; enables the following flags:", 1)[1].split("--disable-error-code", 1)[0]
    flags = [f.strip(" ,") for f in listed.replace("- ", "-").split("--") if f.strip(" ,")]
    return {f.replace("-", "_") for f in flags}


def _mypy_help() -> str:
    done = subprocess.run([sys.executable, "-m", "mypy", "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_strict_modules_get_every_flag_of_mypy_strict() -> None:
    """model/, findings/ and report/ are checked with every flag ``mypy --strict`` enables in the mypy installed (the
    newest-dependencies tier runs this on the newest mypy too): the first test's run is then ``--strict`` on them,
    without a second, cold mypy run of its own (a minute of the suite's CPU)."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+; the package itself runs on 3.10
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    (strict,) = [o for o in config["overrides"] if set(o["module"]) == {f"{m.replace('/', '.')}.*" for m in STRICT}]
    on = {k for k, v in {**config, **strict}.items() if v is True}
    on |= {f"no_{k}" for k, v in strict.items() if v is False}
    missing = _strict_flags() - on
    assert not missing, f"pyproject.toml's strict override lacks {sorted(missing)}"

"""The Python style: `ruff check` and `ruff format --check` over the tree, with pyproject.toml's settings."""

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _ruff(*args: str) -> subprocess.CompletedProcess:
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    assert Path(ruff).exists(), "ruff is missing: pip install -e '.[test]'"
    return subprocess.run([ruff, *args], cwd=REPO, capture_output=True, text=True, timeout=300)


def test_ruff_check_passes():
    done = _ruff("check", "--output-format", "concise", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_format_leaves_the_tree_as_it_is():
    done = _ruff("format", "--check", ".")
    assert done.returncode == 0, f"run `ruff format .`:\n{done.stdout}{done.stderr}"

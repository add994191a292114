"""Find speedscope's file-format JSON schema (npm package `speedscope`) for export tests, or skip saying how."""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

import pytest

CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pmuprof" / "speedscope"
MEMBER = "package/dist/release/file-format-schema.json"


def speedscope_schema() -> Path:
    """$PMUPROF_SPEEDSCOPE_SCHEMA, the cached copy, or a fresh one from `npm pack speedscope`."""
    env = os.environ.get("PMUPROF_SPEEDSCOPE_SCHEMA")
    if env and Path(env).is_file():
        return Path(env)
    cached = CACHE / "file-format-schema.json"
    if cached.is_file():
        return cached
    if shutil.which("npm") is None:
        pytest.skip("speedscope's schema is not cached and npm is missing (apt-get install npm; npm pack speedscope)")
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(
            ["npm", "pack", "speedscope", "--pack-destination", tmp],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp,
        )
        packs = list(Path(tmp).glob("speedscope-*.tgz"))
        if proc.returncode != 0 or not packs:
            pytest.skip(f"npm pack speedscope failed: {proc.stderr.strip()[-200:]}")
        with tarfile.open(packs[0]) as tar:
            data = tar.extractfile(MEMBER)
            if data is None:
                pytest.skip(f"{packs[0].name} has no {MEMBER}")
            CACHE.mkdir(parents=True, exist_ok=True)
            cached.write_bytes(data.read())
    return cached

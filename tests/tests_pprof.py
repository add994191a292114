"""Find Google's pprof for export round-trip tests, or skip saying how to get it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def pprof_tool() -> str:
    candidates = [os.environ.get("PMUPROF_PPROF", ""), shutil.which("pprof") or ""]
    gopath = (
        subprocess.run(["go", "env", "GOPATH"], capture_output=True, text=True).stdout.strip()
        if shutil.which("go")
        else ""
    )
    candidates += [
        str(Path(gopath) / "bin" / "pprof") if gopath else "",
        str(Path.home() / "go" / "bin" / "pprof"),
        str(Path.home() / ".cache" / "pmuprof" / "gobin" / "pprof"),
    ]
    for cand in candidates:
        if cand and Path(cand).is_file() and os.access(cand, os.X_OK):
            return cand
    pytest.skip("Google's pprof is not installed (go install github.com/google/pprof@latest, or set PMUPROF_PPROF)")

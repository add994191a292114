"""Locate installed resources (templates, rules, helper, demo source) from a wheel or a checkout."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
CHECKOUT_DIR = PACKAGE_DIR.parent


def _resource(installed: str, checkout: str) -> Path:
    """Return the installed copy when present, else the checkout's top-level folder."""
    inside = PACKAGE_DIR / installed
    if inside.is_dir() and any(inside.iterdir()):
        return inside
    return CHECKOUT_DIR / checkout


def templates_dir() -> Path:
    return _resource("templates", "templates")


def rules_dir() -> Path:
    return Path(os.environ.get("PMUPROF_RULES") or _resource("rules", "rules"))


def demo_source_dir() -> Path:
    return _resource("demo", "examples/demo")


def helper_path() -> Path | None:
    """The pmuprof-helper executable: $PMUPROF_HELPER, installed, checkout build, or PATH."""
    env = os.environ.get("PMUPROF_HELPER")
    candidates = [Path(env)] if env else []
    candidates += [PACKAGE_DIR / "bin" / "pmuprof-helper", CHECKOUT_DIR / "native" / "build" / "pmuprof-helper"]
    for cand in candidates:
        if cand.is_file() and os.access(cand, os.X_OK):
            return cand
    found = shutil.which("pmuprof-helper")
    return Path(found) if found else None


def perf_path() -> str | None:
    """perf to run: $PMUPROF_PERF or the first perf on PATH."""
    env = os.environ.get("PMUPROF_PERF")
    if env:
        return env
    return shutil.which("perf")

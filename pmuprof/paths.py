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


def installed_copy() -> bool:
    """Whether this pmuprof was installed from a wheel (not run from a checkout, which has native/Makefile)."""
    return not (CHECKOUT_DIR / "native" / "Makefile").is_file()


def cache_dir(sub: str) -> Path:
    """$PMUPROF_CACHE/SUB, else $XDG_CACHE_HOME/pmuprof/SUB, else ~/.cache/pmuprof/SUB (not created here)."""
    base = os.environ.get("PMUPROF_CACHE")
    if base:
        return Path(base) / sub
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "pmuprof" / sub


def templates_dir() -> Path:
    return _resource("templates", "templates")


def rules_dir() -> Path:
    return Path(os.environ.get("PMUPROF_RULES") or installed_rules_dir())


def installed_rules_dir() -> Path:
    """The rules shipped with pmuprof (PMUPROF_RULES aside)."""
    return _resource("rules", "rules")


def demo_source_dir() -> Path:
    return _resource("demo", "examples/demo")


def native_path(name: str, env_var: str) -> Path | None:
    """A native executable: $ENV_VAR, installed in the package, the checkout's build, or PATH."""
    env = os.environ.get(env_var)
    if env is not None:  # set but empty disables it (tests of the fallback path)
        return Path(env) if env and Path(env).is_file() else None
    for cand in (PACKAGE_DIR / "bin" / name, CHECKOUT_DIR / "native" / "build" / name):
        if cand.is_file() and os.access(cand, os.X_OK):
            return cand
    found = shutil.which(name)
    return Path(found) if found else None


def helper_path() -> Path | None:
    """pmuprof-helper (libpfm4 events, counting, PAUSE calibration, skid correction)."""
    return native_path("pmuprof-helper", "PMUPROF_HELPER")


def fold_path() -> Path | None:
    """pmuprof-fold (fast perf-script folder)."""
    return native_path("pmuprof-fold", "PMUPROF_FOLD")


def perf_path() -> str | None:
    """perf to run: $PMUPROF_PERF or the first perf on PATH."""
    env = os.environ.get("PMUPROF_PERF")
    if env:
        return env
    return shutil.which("perf")


def offcpu_path() -> Path | None:
    """pmuprof-offcpu (the BPF off-CPU tracer; built only where clang and libbpf are)."""
    return native_path("pmuprof-offcpu", "PMUPROF_OFFCPU")

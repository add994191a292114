"""The suite's tiers: which tier each test folder (or, as an exception, one file) belongs to.

The one place a test's tier is set: tests/conftest.py marks every collected test from this table and fails
the collection of a test whose folder has no entry; tests/run_tiers.py (the README's test command, through
bootstrap.sh) runs each tier as its own pytest process. docs/development.md says what each tier may do.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

TESTS = Path(__file__).resolve().parent

# fast: no timing or CPU-share assertion and no server; safe to run beside anything (pytest -n 2).
# live: real perf, BPF, MariaDB, sysbench, signals or timing: one test at a time, beside the fast tier.
# build: builds the native code with other flags, a wheel, an sdist, a venv: CPU-heavy, not timing-sensitive.
# cleanroot: installs into a fresh Debian 12 root (I/O-bound: debootstrap, apt); opt-in (-m cleanroot).
# host: recordings compared with perf script byte for byte: alone, before the others, since a BPF program
#   loaded meanwhile (any capture's off-CPU tracer) is in kernel call chains, and a process in another mount
#   namespace in system-wide ones.
TIER_NAMES = ("fast", "live", "build", "cleanroot", "host")
# Tiers the suite leaves out unless asked (run_tiers.py --tier NAME, pytest -m NAME): they install whole systems
# (tests/conftest.py's OPT_IN skips their tests unless -m names them; CI's install job, .ci/install, runs them).
OPT_IN_TIERS = ("cleanroot",)

# Keys are paths under tests/: a folder, or a file that is not in its folder's tier. The longest key wins.
TIERS: dict[str, str] = {
    "unit": "fast",
    "rules": "fast",
    "browser": "fast",
    "cli": "fast",
    "cli/test_packaging.py": "build",
    "cli/test_installed_package.py": "build",
    "native": "fast",
    "native/test_build.py": "build",
    "native/test_fence_live.py": "live",
    "native/test_offcpu_live.py": "live",
    "native/test_offcpu_unwind.py": "live",
    "native/test_perfdata.py": "host",
    "native/test_oncpu_callers.py": "live",
    "native/test_skid_live.py": "live",
    "reliability": "fast",
    "reliability/test_disk.py": "live",
    "reliability/test_misbehaving_perf.py": "live",
    "reliability/test_offcpu_window.py": "live",
    "reliability/test_renamed_threads.py": "live",
    "reliability/test_sanitizers.py": "build",
    "reliability/test_signal_burst.py": "live",
    "reliability/test_signals.py": "live",
    "reliability/test_stubborn_perf.py": "live",
    "integration": "live",
    "integration/test_production_install.py": "build",
    "install": "cleanroot",
    "install/test_newest_dependencies.py": "build",
}


def tier_of(path: Path) -> str | None:
    """The tier of the test file at ``path`` (None when neither it nor a folder above it has an entry)."""
    try:
        parts = Path(path).resolve().relative_to(TESTS).parts
    except ValueError:
        return None
    for n in range(len(parts), 0, -1):
        tier = TIERS.get("/".join(parts[:n]))
        if tier is not None:
            return tier
    return None


def paths_of(tier: str) -> list[Path]:
    """The folders and files that hold the tier's tests and exist here (pytest -m TIER deselects the rest)."""
    keys = [key for key, value in TIERS.items() if value == tier]
    # a file under a folder of the same tier is already in it
    kept = [key for key in keys if not any(key.startswith(other + "/") for other in keys if other != key)]
    return [TESTS / key for key in sorted(kept) if (TESTS / key).exists()]


# What several live modules share for a session: a server (started and filled once per pytest process that
# needs it) or the reliability tier's set of live captures. group_of() says which a module takes (its tests or
# fixtures have a parameter named here, or a fixture named here that takes one); in order: a module taking two
# servers is listed under the first. The live tier's xdist scheduler (tests/conftest.py) keeps each module's
# tests on one worker, and the modules of a KEPT group together (what they share is costly to make twice);
# the modules of the other servers go wherever a worker is free (each worker starts such a server once).
SHARED = {
    "mariadb114_spin200": "mariadb114_spin200",
    "mariadb114": "mariadb114",
    "mariadb114_load": "mariadb114",
    "mariadb102": "mariadb102",
    "mariadb": "mariadb",
    "sysbench_load": "mariadb",
    "live": "live",
}
GROUP_ORDER = ("mariadb114_spin200", "mariadb114", "mariadb102", "mariadb", "live")
# 11.4.5's capture at spin delay 200; 10.2.11's index-dive table; the reliability tier's eleven captures at once
KEPT = frozenset({"mariadb114_spin200", "mariadb102", "live"})


@functools.cache
def group_of(module: str) -> str:
    """The shared fixture a test module (a path under the checkout, as in a test id) takes, else the module
    itself: the first in GROUP_ORDER any of its functions has as a parameter."""
    try:
        tree = ast.parse((TESTS.parent / module).read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return module
    taken = {
        SHARED[arg.arg]
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for arg in node.args.args
        if arg.arg in SHARED
    }
    return next((group for group in GROUP_ORDER if group in taken), module)


# Units handed out first in the live tier: their loads are paced (tests/incident_loads.py RATES), so they keep a
# server busy for minutes on a fraction of a CPU. First, they run beside the fast tier, which has work for every
# CPU; as the tier's tail (the collection's order puts them after the shared servers' modules) they left the
# host 0.8-1.2 CPUs busy for its last minutes, the two of them side by side (tests/timeline.py on the 12 min 48 s
# and 13 min 54 s runs in docs/development.md).
PACED_FIRST = ("tests/integration/test_incidents_",)


def order_of(module: str) -> int:
    """Where the module's unit comes in the live tier's order: paced units, then those sharing a server or a
    capture set, then the rest (a stable sort: the collection's order within each)."""
    if module.startswith(PACED_FIRST):
        return 0
    return 1 if not group_of(module).endswith(".py") else 2


def unit_of(module: str) -> str:
    """What one worker runs together: a KEPT group's modules, else one module."""
    group = group_of(module)
    return group if group in KEPT else module

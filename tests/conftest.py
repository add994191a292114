"""Shared pytest setup: make tests/ helpers importable, mark each test with its tier (tests/tiers.py), skip
the opt-in tiers unless asked; ``target``: a process to capture."""

import signal
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tiers import TIER_NAMES, tier_of  # noqa: E402

# A suite started in the background (`cmd &` from a script, nohup) inherits SIGINT and SIGHUP ignored, and
# every capture the tests start would too: pmuprof keeps an inherited SIG_IGN (nohup's intent), so the
# Ctrl-C and SIGHUP tests would see their signal ignored. The tests' children get a terminal's dispositions.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


# Opt-in tiers: collected with the suite, skipped unless `-m` names them (docs/development.md has each one's
# command and time budget). Neither fits the default suite's time: they install whole systems from the network.
OPT_IN = {
    "cleanroot": "the install commands of the docs, as written, in fresh Debian 12 roots (root, mmdebstrap)",
    "newest_deps": "pmuprof on the newest dependency versions pyproject.toml allows (fetched from the index)",
}


def pytest_configure(config):
    for name, what in OPT_IN.items():
        config.addinivalue_line("markers", f"{name}: {what}")


def _skip_opt_in(config, items):
    asked = config.getoption("markexpr", "") or ""
    for item in items:
        for name in OPT_IN:
            if item.get_closest_marker(name) and name not in asked:
                why = f"the {name} tier runs only when asked: pytest -m {name} (docs/development.md)"
                item.add_marker(pytest.mark.skip(reason=why))


@pytest.fixture
def target():
    """A sleeping Python process for a capture to aim at (the canned perf never touches it); killed after."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1e6)"])  # alive until killed
    yield proc
    proc.kill()
    proc.wait()


# What several modules share for a whole session (servers, the reliability tier's set of live captures): the
# live tier runs on xdist workers with --dist loadgroup, and every module using one of these is one group
# (one worker), so each is started once; any other module is a group of its own (its captures made once).
SHARED_SESSION = ("mariadb114", "mariadb102", "mariadb", "live")


def _xdist_groups(items) -> None:
    modules: dict[str, str] = {}
    for item in items:
        module = item.nodeid.split("::")[0]
        shared = next((name for name in SHARED_SESSION if name in item.fixturenames), None)
        if shared and module not in modules:
            modules[module] = shared
    for item in items:
        module = item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(modules.get(module, module)))


def pytest_collection_modifyitems(config, items):
    """Every test gets its tier's marker from its folder (tests/tiers.py); a test without one stops the run.
    Tests of an opt-in tier are skipped, with the command that runs them, unless `-m` names it."""
    if config.pluginmanager.hasplugin("xdist"):
        _xdist_groups(items)
    untiered = set()
    for item in items:
        tier = tier_of(item.path)
        if tier is None:
            untiered.add(str(item.path))
            continue
        item.add_marker(getattr(pytest.mark, tier))
        for other in TIER_NAMES:
            if other != tier and item.get_closest_marker(other) is not None:
                untiered.add(f"{item.nodeid} (marked {other}, its folder says {tier})")
    _skip_opt_in(config, items)
    if untiered:
        raise pytest.UsageError(
            "tests without a tier (add the folder to TIERS in tests/tiers.py): " + ", ".join(sorted(untiered))
        )

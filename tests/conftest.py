"""Shared pytest setup: make tests/ helpers importable, mark each test with its tier (tests/tiers.py), skip
the opt-in tiers unless asked; ``target``: a process to capture."""

import signal
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from shared import timeline  # noqa: E402
from tiers import TIER_NAMES, order_of, tier_of, unit_of  # noqa: E402

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


@pytest.hookimpl(optionalhook=True)  # defined by pytest-xdist, when it is installed
def pytest_xdist_make_scheduler(config, log):
    """--dist loadgroup (the live tier): each unit (tests/tiers.py: unit_of, a module or a kept group of
    modules) on one worker, units in the order collected (pytest_collection_modifyitems: paced units, then those
    sharing servers), so a module's captures are made once and the long units do not come last. xdist's own
    loadgroup reads a group from the test id, which pytest 9 no longer lets a plugin change (xdist 3.8 sets
    Item._nodeid, pytest 9.2 reads Item._id): its groups were lost, and a module's tests, with their
    captures and servers, were split over both workers."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Units(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid.split("::", 1)[0])

    config.option.loadscopereorder = False  # the collection's order, not the number of tests in a unit
    return Units(config, log)


def pytest_collection_modifyitems(config, items):
    """Every test gets its tier's marker from its folder (tests/tiers.py); a test without one stops the run.
    Tests of an opt-in tier are skipped, with the command that runs them, unless `-m` names it.
    In an xdist worker the paced units come first, then the modules that take a shared server or capture set
    (tests/tiers.py's order_of; a stable sort): the workers' order is the order the live tier's scheduler hands
    out units in."""
    if hasattr(config, "workerinput"):  # a worker's own --dist is "no": this is how it knows it is one
        items.sort(key=lambda item: order_of(item.nodeid.split("::", 1)[0]))
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


def pytest_runtest_logstart(nodeid, location):
    timeline("start", nodeid)


def pytest_runtest_logfinish(nodeid, location):
    timeline("end", nodeid)

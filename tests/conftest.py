"""Shared pytest setup: make tests/ helpers importable; ``target``: a process to capture."""

import signal
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

# A suite started in the background (`cmd &` from a script, nohup) inherits SIGINT and SIGHUP ignored, and
# every capture the tests start would too: pmuprof keeps an inherited SIG_IGN (nohup's intent), so the
# Ctrl-C and SIGHUP tests would see their signal ignored. The tests' children get a terminal's dispositions.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


@pytest.fixture
def target():
    """A sleeping Python process for a capture to aim at (the canned perf never touches it); killed after."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield proc
    proc.kill()
    proc.wait()

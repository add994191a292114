"""tests/run_tiers.py starts a tier only once every tier it waits for has ended: the clean-root tier after the
live tier (a root's /proc is the host's, so its `pmuprof doctor` would see the live tier's servers come and go)."""

from __future__ import annotations

import fcntl
import sys
from pathlib import Path

import pytest

import run_tiers

# Each tier's stand-in appends "<name> start" and "<name> end" to one file; the live tier's takes a while.
STAND_IN = (
    "import sys, time\n"
    "name, journal, pause = sys.argv[1], sys.argv[2], float(sys.argv[3])\n"
    "open(journal, 'a').write(name + ' start\\n')\n"
    "time.sleep(pause)\n"
    "open(journal, 'a').write(name + ' end\\n')\n"
)


def test_the_clean_root_tier_waits_for_the_live_tier(tmp_path, capsys):
    journal = tmp_path / "journal"
    pauses = {"host": 0.0, "live": 0.5, "cleanroot": 0.0}
    tiers = [
        run_tiers.Tier(name, [sys.executable, "-c", STAND_IN, name, str(journal), str(pause)], tmp_path / f"{name}.log")
        for name, pause in pauses.items()
    ]
    with open(tmp_path / "host.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        run_tiers.run_all(tiers, {}, lock)
    capsys.readouterr()
    lines = journal.read_text().splitlines()
    assert all(t.code == 0 for t in tiers), [t.code for t in tiers]
    assert lines.index("live end") < lines.index("cleanroot start"), lines
    assert lines.index("host end") < lines.index("live start"), lines


def test_a_tier_not_run_does_not_hold_the_others_back(tmp_path, capsys):
    """`--tier cleanroot` alone: the tiers it waits for are not in the run, so it starts at once."""
    journal = tmp_path / "journal"
    argv = [sys.executable, "-c", STAND_IN, "cleanroot", str(journal), "0"]
    tiers = [run_tiers.Tier("cleanroot", argv, tmp_path / "cleanroot.log")]
    with open(tmp_path / "host.lock", "w") as lock:
        run_tiers.run_all(tiers, {}, lock)
    capsys.readouterr()
    assert journal.read_text().splitlines() == ["cleanroot start", "cleanroot end"]


def test_a_yielding_tier_runs_at_its_nice_in_a_group_of_its_own(tmp_path, capsys):
    """The fast tier's session is scheduled at YIELDING's nice, not the runner's group (where the kernel has
    autogroups)."""
    if not Path("/proc/self/autogroup").exists():
        pytest.skip("no autogroups in this kernel: run_tiers sets nothing")
    journal = tmp_path / "journal"
    tier = run_tiers.Tier("fast", [sys.executable, "-c", STAND_IN, "fast", str(journal), "30"], tmp_path / "fast.log")
    run_tiers.start(tier, {})
    try:
        mine = Path("/proc/self/autogroup").read_text().split()
        theirs = Path(f"/proc/{tier.proc.pid}/autogroup").read_text().split()
        if not mine or "could not be set" in capsys.readouterr().out:
            pytest.skip(f"this process may not set a scheduling group's nice here: {mine}")
        assert theirs[0] != mine[0] and theirs[-1] == str(run_tiers.YIELDING["fast"]), (mine, theirs)
    finally:
        tier.proc.kill()
        tier.proc.wait()

"""Shared helpers for rule tests: load a fixture (folded + optional facts JSON and off-CPU stacks) into a Profile.

``NAME.folded`` holds the on-CPU stacks, ``NAME.json`` the facts (run, counters, mysql, analysis,
``threads``: threads.json, ``series``: series.json, ``activity``: the processlist polls as model/activity.py's
Activity, and ``status``: status.json, the server's counters once a second and its InnoDB state),
``NAME.offcpu`` the off-CPU stacks (offcpu.folded, counts in µs).
"""

from __future__ import annotations

import functools
import json
from dataclasses import replace
from pathlib import Path

import pytest

from pmuprof.analysis.analyse import with_quality
from pmuprof.model.analysis import StackQuality
from pmuprof.findings.loader import load_rules
from pmuprof.model.folded import load_folded
from pmuprof.model.jsontypes import from_json
from pmuprof.model.offcpu import OffCpuProfile, Threads
from pmuprof.model.profile import Profile
from pmuprof.model.series import SeriesSet
from pmuprof.model.stacks import Stacks
from pmuprof.model.activity import Activity
from pmuprof.model.status import ServerStatus
from helpers import make_profile

FIXTURES = Path(__file__).parent / "fixtures"
RULES_DIR = Path(__file__).resolve().parents[2] / "rules"


@functools.cache
def _stacks(path: Path) -> tuple[Stacks, dict[str, str]]:
    """A folded file's stacks, parsed once per run (Stacks are not changed once made): the placeholder tests
    load each fire fixture once for every fact they drop."""
    stacks, headers = load_folded(path)
    return Stacks.of(stacks), headers


def load_fixture(path: Path, facts: dict | None = None) -> tuple[Profile, dict[str, str]]:
    """The fixture as a Profile, and its headers; ``facts`` stands in for its NAME.json when given."""
    stacks, headers = _stacks(path)
    headers = dict(headers)
    facts_path = path.with_suffix(".json")
    if facts is None:
        facts = json.loads(facts_path.read_text(encoding="utf-8")) if facts_path.is_file() else {}
    profile = make_profile(
        stacks, facts.get("run"), facts.get("counters"), facts.get("mysql"), facts.get("analysis"), str(path)
    )
    off_path = path.with_suffix(".offcpu")
    if off_path.is_file():
        off_stacks, off_headers = _stacks(off_path)
        off_headers = dict(off_headers)
        threads = from_json(Threads, facts.get("threads") or {})
        profile = replace(profile, offcpu=OffCpuProfile(off_stacks, threads, off_headers))
    if facts.get("series") is not None:
        profile = replace(profile, series=from_json(SeriesSet, facts["series"]))
    if facts.get("activity") is not None:
        profile = replace(profile, activity=from_json(Activity, facts["activity"]))
    if facts.get("status") is not None:
        try:  # a damaged status.json is left out, as the run directory's reader leaves it out
            profile = replace(profile, status=from_json(ServerStatus, facts["status"]))
        except (TypeError, ValueError):
            pass
    return _with_quality(profile, path, facts.get("run")), headers


_QUALITY: dict[tuple[Path, str], tuple[StackQuality, ...]] = {}


def _with_quality(profile: Profile, path: Path, run: dict | None) -> Profile:
    """with_quality's, made once for a fixture and its run facts: it reads only the stacks and the run, and the
    placeholder tests load each fire fixture once for every fact they drop (most of them not the run's)."""
    if profile.analysis.quality:
        return profile
    key = (path, json.dumps(run, sort_keys=True))
    if key not in _QUALITY:
        _QUALITY[key] = with_quality(profile).analysis.quality
    return replace(profile, analysis=replace(profile.analysis, quality=_QUALITY[key]))


@pytest.fixture(scope="session")
def rules():
    return load_rules(RULES_DIR)

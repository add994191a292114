"""Shared helpers for rule tests: load a fixture (folded + optional facts JSON) into a Profile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pmuprof.analysis.analyse import with_quality
from pmuprof.findings.loader import load_rules
from pmuprof.model.folded import load_folded
from pmuprof.model.profile import Profile
from helpers import make_profile

FIXTURES = Path(__file__).parent / "fixtures"
RULES_DIR = Path(__file__).resolve().parents[2] / "rules"


def load_fixture(path: Path) -> tuple[Profile, dict[str, str]]:
    stacks, headers = load_folded(path)
    facts_path = path.with_suffix(".json")
    facts = json.loads(facts_path.read_text(encoding="utf-8")) if facts_path.is_file() else {}
    profile = make_profile(stacks, facts.get("run"), facts.get("counters"), facts.get("mysql"), facts.get("analysis"),
                           str(path))
    return with_quality(profile), headers


@pytest.fixture(scope="session")
def rules():
    return load_rules(RULES_DIR)

"""Facts the rules read besides stacks, for one process: server, host/target, counters, analysis."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..model.analysis import Analysis, StackQuality
from ..model.counters import Counters
from ..model.jsontypes import dig
from ..model.profile import Profile
from ..model.run import Run, Target
from ..model.server import ServerFacts, family_from_name, server_family
from .versions import parse_version

__all__ = ["Facts", "dig", "facts_for", "number"]


def number(value: Any) -> float | None:
    """A float from an int/float/numeric string ('ON'/'OFF' → 1/0); None otherwise."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = value.strip().replace(",", "")
        if text.upper() in ("ON", "TRUE", "YES"):
            return 1.0
        if text.upper() in ("OFF", "FALSE", "NO"):
            return 0.0
        try:
            return float(text)
        except ValueError:
            return None
    return None


@dataclass(frozen=True)
class Facts:
    """Everything non-stack a matcher may read, for one target process."""

    process: str
    run: Run
    counters: Counters
    server: ServerFacts | None
    analysis: Analysis
    target: Target | None = None
    quality: StackQuality | None = None
    family: str | None = None
    version: tuple[int, ...] = ()
    version_text: str = ""
    server_missing: str = ""

    def variable(self, name: str) -> str | None:
        return self.server.variable(name) if self.server else None

    def status(self, name: str) -> Any:
        return self.server.status.get(name) if self.server else None

    def counter(self, name: str) -> float | None:
        return self.counters.value(name)


def facts_for(profile: Profile, process: str) -> Facts:
    """Collect server/host/target facts for one process label of the profile.

    Server facts apply only to the process they were collected from (same pid): a second
    process of a system-wide input never borrows the server's variables.
    """
    server = profile.server_for(process)
    family, version, text, missing = None, (), "", ""
    if profile.server is None:
        missing = "no mysql.json: server version and variables unknown"
    elif server is None:
        missing = f"server facts belong to pid {profile.server.pid}, not to {process}"
    elif not server.reachable:
        missing = f"server not reachable ({server.error or 'no reason given'}): version and variables unknown"
        server = None
    else:
        family = server.server.family or None
        text = server.server.version
        version = tuple(server.server.version_tuple) or parse_version(text)
        family = family or server_family(text, server.server.version_comment)
    target = profile.target(process)
    if family is None:
        info = profile.process_info(process)
        exe = target.exe if target else (info.binary if info else "")
        family = family_from_name(process) or family_from_name(exe)
    return Facts(process, profile.run, profile.counters, server, profile.analysis, target,
                 profile.analysis.quality_of(process), family, version, text, missing)

"""Facts the rules read besides stacks, for one process: server, host/target, counters, analysis."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..model.analysis import Analysis, StackQuality
from ..model.counters import Counters
from ..model.jsontypes import dig
from ..model.profile import Profile
from ..model.run import Run, Target
from ..model.series import SeriesSet
from ..model.server import ServerFacts, family_from_name, server_family
from ..model.activity import Activity
from ..model.wincounters import WindowCounters
from .versions import parse_version

__all__ = ["Facts", "dig", "facts_for", "number", "server_version"]


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
    series: SeriesSet | None = None  # the capture's per-second series (series.json), for every process alike
    window: WindowCounters | None = None  # the server's counters over the window (status.json, else mysql.json)
    activity: Activity | None = None  # the processlist over the window (only with its server facts)

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
    family: str | None = None
    version: tuple[int, ...] = ()
    text, missing, unknown = "", "", ""
    if profile.server is None:
        missing, unknown = "no mysql.json", "server version and variables unknown"
    elif server is None:
        missing = f"server facts belong to pid {profile.server.pid}, not to {process}"
    elif not server.reachable:
        missing = f"server not reachable ({server.error or 'no reason given'})"
        unknown = "version and variables unknown"
        server = None
    else:
        family = server.server.family or None
        text = server.server.version
        version = tuple(server.server.version_tuple) or parse_version(text)
        family = family or server_family(text, server.server.version_comment)
    target = profile.target(process)
    info = profile.process_info(process)
    exe = target.exe if target else (info.binary if info else "")
    built = _built_version(profile, exe) if server is None else ""
    if built:  # offline: the server binary says its own version; variables and status stay unknown
        text, version = built, parse_version(built)
        family = family or server_family(built, "")
        unknown = f"server variables unknown; version {built} read from the binary"
    missing = f"{missing}: {unknown}" if missing and unknown else missing
    if family is None:
        family = _family_by_name(profile, process, exe)
    return Facts(
        process,
        profile.run,
        profile.counters,
        server,
        profile.analysis,
        target,
        profile.analysis.quality_of(process),
        family,
        version,
        text,
        missing,
        profile.series,
        profile.window_counters(process),
        _activity(profile, server),
    )


def _activity(profile: Profile, server: ServerFacts | None) -> Activity | None:
    """The processlist polls of the capture when the server facts are this process's, else mysql.json's one
    snapshot of it."""
    if server is None:
        return None
    if profile.activity is not None:
        return profile.activity
    return Activity.of_snapshot(server.processlist.states) if server.processlist is not None else None


def server_version(profile: Profile) -> tuple[str, str]:
    """The first target's server version and where it came from: ("11.4.5-MariaDB", "server") when the
    server was asked, (…, "binary") when its binary's version string says it, ("", "") when unknown."""
    if profile.server is not None and profile.server.reachable and profile.server.server.version:
        return profile.server.server.version, "server"
    processes = profile.processes()
    facts = facts_for(profile, processes[0]) if processes else None
    return (facts.version_text, "binary") if facts is not None and facts.version_text else ("", "")


def _family_by_name(profile: Profile, process: str, exe: str) -> str | None:
    """'mariadbd' is MariaDB; 'mysqld' is MySQL's name and MariaDB's before 10.5, so it says MySQL only
    when the binary was read and carries no MariaDB version string; else the family stays unknown."""
    named = family_from_name(process) or family_from_name(exe)
    if named != "mysql":
        return named
    read = bool(exe) and any(b.path == exe and b.file and not b.server_version for b in profile.analysis.binaries)
    return named if read else None


def _built_version(profile: Profile, exe: str) -> str:
    """The version string of the process's server binary: the one at its path, else the only one there is."""
    found = {b.path: b.server_version for b in profile.analysis.binaries if b.server_version}
    if exe in found:
        return found[exe]
    versions = set(found.values())
    return versions.pop() if len(versions) == 1 and not exe else ""

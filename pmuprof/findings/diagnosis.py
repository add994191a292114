"""The Diagnosis: ordered findings, their cause groups, the latch waits and the verdict's cause, built once."""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Iterable, Mapping

from .busiest import Busiest
from .latches import LatchWaits
from .model import Finding, ordered


@dataclass(frozen=True)
class Group:
    """A cause and the findings it explains (each once, in the order the cause names them)."""

    cause: Finding
    consequences: tuple[Finding, ...] = ()


@dataclass(frozen=True)
class Diagnosis:
    """What the engine concluded; every writer, the CLI summary, the seconds strip and metrics read it.

    ``findings`` are ordered (findings/model.py ``ordered``): groups first by their gravest finding,
    each cause followed by what it explains. ``latches``: per process, the spin and waits by latch.
    ``busiest``: when there is no ``top`` (a healthy run), where the time went in server terms
    (findings/busiest.py), what the healthy verdict names; None otherwise.
    """

    findings: tuple[Finding, ...] = ()
    latches: Mapping[str, tuple[LatchWaits, ...]] = field(default_factory=dict)
    groups: tuple[Group, ...] = ()
    busiest: Busiest | None = None

    @classmethod
    def of(cls, findings: Iterable[Finding], latches: Mapping[str, tuple[LatchWaits, ...]] | None = None) -> Diagnosis:
        found = tuple(ordered(list(findings)))
        return cls(found, dict(latches or {}), _groups(found))

    @property
    def causes(self) -> tuple[Finding, ...]:
        """The findings nothing else explains, gravest first: "the top causes"."""
        return tuple(g.cause for g in self.groups)

    @property
    def top(self) -> Finding | None:
        """The verdict's cause: the first cause, unless it is only information (then the run is healthy)."""
        return self.groups[0].cause if self.groups and self.groups[0].cause.severity != "info" else None


def _groups(findings: tuple[Finding, ...]) -> tuple[Group, ...]:
    by_rule = {(f.process, f.rule): f for f in findings}
    return tuple(
        Group(f, tuple(_consequences(f, by_rule)))
        for f in findings
        if not (f.explained_by and (f.process, f.explained_by) in by_rule)
    )


def _consequences(
    cause: Finding, by_rule: Mapping[tuple[str, str], Finding], seen: frozenset[str] = frozenset()
) -> list[Finding]:
    out: list[Finding] = []
    for rule in cause.explains:
        f = by_rule.get((cause.process, rule))
        if f is not None and rule not in seen:
            out += [f] + _consequences(f, by_rule, seen | {rule, cause.rule})
    return out

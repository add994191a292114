"""The Finding: what a rule concluded, with the evidence that fired it (findings.json contract)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict
from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from .evidence import Evidence
from .kinds.base import Declared
from .schema import Thresholds
from .steps import FixStep, FixStepJSON

SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}


class ConfidenceJSON(TypedDict, total=False):
    """A finding's ``confidence`` in findings.json: {} when the finding has none; basis, unit and blocked_s
    only when it is graded on something else than samples."""

    samples: int | None
    total: int | None
    threshold: float | None
    margin: float | None
    confirmed: list[str]
    not_confirmed: list[str]
    refuted: list[str]
    decided_by: str
    would_decide: list[str]
    level: str
    basis: str
    unit: str
    blocked_s: float | None
    value: float | None  # the measurement the threshold was held against, with basis


class FindingJSON(TypedDict):
    """One finding of findings.json (docs/internals.md "Findings"; the report's finding cards read it too)."""

    rule: str
    severity: str
    title: str
    share: float
    message: str
    evidence: dict[str, Any]  # each item's to_json (floats to 6 places), then samples, server, raised_by, thresholds
    fix: list[FixStepJSON]
    next_steps: list[str]
    references: list[str]
    chain: list[str]
    process: str
    missing: list[str]
    confidence: ConfidenceJSON
    explains: list[str]
    explained_by: str


@dataclass(frozen=True)
class Confidence:
    """How sure a finding is: samples behind the headline, its margin over the threshold, and what the server's
    facts said (confirmed, refuted, or which facts would decide when the input has none of them)."""

    samples: int | None  # behind the metric that set the level (None: not a stack share, or off-CPU time)
    total: int | None  # the process's samples
    threshold: float | None
    margin: float | None  # value / threshold, 2 places
    confirmed: tuple[str, ...]
    not_confirmed: tuple[str, ...]
    level: str  # high | medium | low
    basis: str = ""  # "off-CPU time" when graded on it ("" = samples)
    unit: str = ""  # the threshold's unit then ("threads")
    blocked_s: float | None = None  # seconds blocked behind it then
    value: float | None = None  # the measurement the threshold was held against (threads blocked, a share)
    refuted: tuple[str, ...] = ()  # the facts that set it aside (never the verdict)
    decided_by: str = ""  # for a rule no server fact bears on: what decides it
    would_decide: tuple[str, ...] = ()  # the facts that would decide it, none of which the input has

    def to_json(self) -> ConfidenceJSON:
        out: ConfidenceJSON = {
            "samples": self.samples,
            "total": self.total,
            "threshold": self.threshold,
            "margin": self.margin,
            "confirmed": list(self.confirmed),
            "not_confirmed": list(self.not_confirmed),
            "refuted": list(self.refuted),
            "decided_by": self.decided_by,
            "would_decide": list(self.would_decide),
            "level": self.level,
        }
        if self.basis:
            out.update({"basis": self.basis, "unit": self.unit, "blocked_s": self.blocked_s, "value": self.value})
        return out


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str  # critical | warning | info
    title: str
    share: float  # fraction of the target's samples the finding covers, 0..1
    message: str = ""
    # each declared evidence item's value, in rule order: a frozen Evidence (findings/evidence.py), or None
    # (not known)
    evidence: Mapping[str, Evidence | None] = field(default_factory=dict)
    fix: tuple[FixStep, ...] = ()  # the steps for this server, in rule order (each says its variant's servers)
    next_steps: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    chain: tuple[str, ...] = ()  # hot frame first, then the callers that explain it
    process: str = ""  # process label the finding is about ("" = all targets)
    missing: tuple[str, ...] = ()  # facts the rule could not use (no mysql.json, no PMU, ...)
    confidence: Confidence | None = None
    explains: tuple[str, ...] = ()  # symptom findings (rule ids) this cause accounts for
    explained_by: str = ""  # the cause finding (rule id) this symptom is grouped under
    # fired findings (rule ids, above info) whose rules name this one as their symptom, though the stacks did
    # not group it under them: a spin with a fired cause elsewhere ranks after its causes
    symptom_of: tuple[str, ...] = ()
    # threads the headline holds on average: blocked (graded on off-CPU time) or on the CPU (samples over
    # frequency x duration); None when the capture does not say
    threads: float | None = None
    samples: int | None = None  # the process's samples (None: not said, as in a finding built by hand)
    server: str | None = None  # the server as detected ("MariaDB 10.2.11", "unknown server")
    raised_by: tuple[str, ...] = ()  # the raise_if conditions that held
    thresholds: Thresholds | None = None  # the rule's levels
    # its cause is one of several latches the stacks cannot tell apart ("A or B"): of two findings with the
    # same weight, the one that names its latch ranks first
    ambiguous: bool = False
    # the server facts that refute it (its confidence says so too): set aside, at info, never the verdict
    refuted: tuple[str, ...] = ()
    # rows (of the process's Stacks, sorted) behind the headline share: for grouping only, never written
    stacks: npt.NDArray[np.int64] | None = field(default=None, repr=False, compare=False)
    # the rule's evidence declarations, in rule order: for showing the evidence (not in findings.json)
    declared: tuple[Declared, ...] = field(default=(), repr=False, compare=False)

    def evidence_json(self) -> dict[str, Any]:
        """findings.json's ``evidence``: each item as JSON (floats to 6 places), then what the engine adds."""
        out: dict[str, Any] = {
            name: _json(value.to_json()) if value is not None else None for name, value in self.evidence.items()
        }
        if self.samples is not None:
            out["samples"] = self.samples
        if self.server is not None:
            out["server"] = self.server
        if self.raised_by:
            out["raised_by"] = list(self.raised_by)
        th = self.thresholds
        if th is not None:
            out["thresholds"] = {
                k: getattr(th, k) for k in ("info", "warning", "critical") if getattr(th, k) is not None
            }
            out["thresholds"].update(metric=list(th.metrics), below=th.below)
        return out

    @property
    def basis(self) -> str:
        """What the share is of: 'samples', or 'off-CPU time'."""
        return (self.confidence.basis if self.confidence is not None else "") or "samples"

    def fix_text(self) -> str:
        """The fix as plain text: each step, after its variant's servers when they are said (for search and logs)."""
        return "\n\n".join(f"{s.applies_to}: {s.text}" if s.applies_to else s.text for s in self.fix)

    def sort_key(self) -> tuple[int, float, str]:
        return (SEVERITY_ORDER.get(self.severity, 9), -self.share, self.rule)

    def to_dict(self) -> FindingJSON:
        return {
            "rule": self.rule,
            "severity": self.severity,
            "title": self.title,
            "share": round(self.share, 6),
            "message": self.message,
            "evidence": self.evidence_json(),
            "fix": [step.to_json() for step in self.fix],
            "next_steps": list(self.next_steps),
            "references": list(self.references),
            "chain": list(self.chain),
            "process": self.process,
            "missing": list(self.missing),
            "confidence": self.confidence.to_json() if self.confidence is not None else {},
            "explains": list(self.explains),
            "explained_by": self.explained_by,
        }


def _json(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, Mapping):
        return {k: _json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json(v) for v in value]
    return value


def ordered(findings: list[Finding]) -> list[Finding]:
    """The ranking, decided here once (the verdict is the first cause):

    0. a finding the server's facts refute comes last: it is never the verdict;
    1. a symptom whose possible cause fired (``symptom_of``) ranks after the causes, whatever its level:
       the spin is not the verdict when the pool, the index latch or lock_sys that makes threads spin is;
    2. then groups by their gravest finding (a warning cause of a critical symptom ranks as critical: the
       group is what needs fixing);
    3. then by the threads the cause holds and those of the findings it explains (a stall of eight threads off
       the CPU above an on-CPU finding of fewer; a table rebuild with the statements it makes wait for its
       metadata lock); causes the capture gives no thread count for (facts, counters, a folded input) after
       those, by the samples behind their share (share x the process's samples: across processes the busier
       one's first; within one, by share); at equal weight a cause that names its latch before one that cannot
       (``ambiguous``: "page latch or index tree latch");
    each cause followed by the findings it explains (severity, share, rule id: stable output)."""
    by_key = {(f.process, f.rule): f for f in findings}

    def cause(f: Finding) -> Finding:
        return by_key.get((f.process, f.explained_by), f) if f.explained_by else f

    gravest: dict[tuple[str, str], int] = {}
    held: dict[tuple[str, str], float] = {}  # threads of a cause's group: its own and its consequences'
    for f in findings:
        c = cause(f)
        at = (c.process, c.rule)
        gravest[at] = min(gravest.get(at, 9), SEVERITY_ORDER.get(f.severity, 9))
        if c.threads is not None and f.threads is not None:
            held[at] = held.get(at, 0.0) + f.threads

    def rank(f: Finding) -> tuple[bool, bool, int, bool, float, bool, str, str, bool, tuple[int, float, str]]:
        c = cause(f)
        # without a thread count, the samples behind the headline: a share of a process's own samples weighs by
        # that process's samples, so of several processes the busier one's cause comes first
        if c.threads is not None:
            weight = held.get((c.process, c.rule), 0.0)
        else:
            weight = c.share * c.samples if c.samples else c.share
        return (
            bool(c.refuted),
            bool(c.symptom_of),
            gravest[(c.process, c.rule)],
            c.threads is None,
            -weight,
            c.ambiguous,
            c.process,
            c.rule,
            f is not c,
            f.sort_key(),
        )

    return sorted(findings, key=rank)

"""Evaluate rules against a Profile, per target process, into a Diagnosis of ordered, grouped Findings.

Per process: latch attribution once (findings/latches.py), every rule's matchers (findings/kinds/),
the level from the metric that fired, caps (1 % of samples and MIN_THREADS for stack shares, confirmation,
min_samples), the server facts that confirm or refute it (a refuted finding is set aside at info), fixes that fit
the detected server, then grouping: a cause finding names the symptom findings it explains.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from collections.abc import Iterable, Mapping

import numpy as np

from ..model.profile import Profile
from ..model.server import FAMILY_NAMES, for_family
from .facts import Facts, facts_for, number
from .fixcheck import absent
from .grade import (
    MIN_STACK_SHARE,
    Checked,
    Grade,
    check,
    confidence,
    grade,
    holds,
    is_counter_metric,
    is_offcpu_metric,
    is_stack_metric,
)
from .knowledge import latch_table
from .latches import Attributor, LatchWaits, attribute
from .loader import load_rules
from .kinds import Env, kind_of
from .busiest import busiest
from .diagnosis import Diagnosis
from .evidence import Blocked, Evidence
from .kinds.base import Declared
from .model import Confidence, Finding
from .patterns import lock_wrappers
from .schema import SEVERITIES, FixItem, Rule
from .steps import FixStep, step_problem
from .stackmatch import StackIndex
from .stackshare import OffCpuTime, StackMatch
from .template import lookup, render, scalar
from .versions import in_range

MIN_PROCESS_SHARE = 0.02  # with several processes, ignore ones under 2 % of the samples


def diagnose(profile: Profile, rules: Iterable[Rule] | None = None) -> Diagnosis:
    rules = tuple(load_rules() if rules is None else rules)
    processes = profile.processes()
    blocked = profile.offcpu.stacks.per_root() if profile.offcpu else {}
    processes += [p for p in blocked if p not in processes]  # a server blocked all along has no samples
    total = profile.total or 1
    findings: list[Finding] = []
    latches: dict[str, tuple[LatchWaits, ...]] = {}
    for process in processes:
        facts = facts_for(profile, process)
        attributor = Attributor(latch_table(), facts.family, facts.version)
        index = StackIndex(profile, process, attributor)
        if len(processes) > 1 and index.total / total < MIN_PROCESS_SHARE and not blocked.get(process):
            continue
        latches[process] = attribute(index.waits(), index.total, attributor.latches)
        usable = rules if index.total else tuple(r for r in rules if _reads_offcpu(r))  # only blocked: no CPU rules
        recorded = _cores(profile.total, facts)  # what an analysis share of the samples is a share of
        found = [f for f in (evaluate_rule(rule, index, facts, recorded) for rule in usable) if f is not None]
        findings += group(found, {r.id: r for r in rules}, index.st.counts)
    diagnosis = Diagnosis.of(findings, latches)
    return diagnosis if diagnosis.top else replace(diagnosis, busiest=busiest(profile))


def evaluate(profile: Profile, rules: Iterable[Rule] | None = None) -> list[Finding]:
    """All findings for the profile: per process label when there are several; ordered."""
    return list(diagnose(profile, rules).findings)


def applies(rule: Rule, facts: Facts) -> bool:
    """Unknown server → applies; a known family must be listed (Percona falls back to MySQL)."""
    if rule.servers is None or facts.family is None:
        return True
    spec = for_family(rule.servers, facts.family)
    return spec is not None and in_range(facts.version, spec)


def evaluate_rule(rule: Rule, index: StackIndex, facts: Facts, recorded_cores: float | None = None) -> Finding | None:
    """One rule on one process: None when it does not apply or does not fire. ``recorded_cores``: the threads on
    the CPU all the recording's samples are (grade's, for the analysis shares)."""
    if not applies(rule, facts):
        return None
    missing: list[str] = []
    skip = lock_wrappers(rule.skip_callers.patterns)
    env = Env(index, facts, skip, missing)
    values: dict[str, Any] = {m.name: kind_of(m.kind).evaluate(m, env) for m in rule.evidence}
    values.update(samples=index.total, process=facts.process, server=_server_text(facts))
    if not all(holds(c, values) for c in rule.fire_all):
        return None
    if rule.fire_any and not any(holds(c, values) for c in rule.fire_any):
        return None
    g = grade(rule, values, _cores(index.total, facts), index.total, recorded_cores)
    if g is None:
        return None
    checked = check(rule, values)
    raised_by = [c.evidence for c in rule.raise_if if holds(c, values)]
    share_ev = _stack_evidence(rule, values, ((g.metric,) if g.metric else ()) + ((rule.share,) if rule.share else ()))
    share = _headline_share(rule, g, values, share_ev)
    threads = _threads(rule, g, values, share, index.total, facts)
    level = _capped(rule, g, index.total, raised_by, checked, missing)
    chain_ev = _stack_evidence(rule, values, rule.chain) if rule.chain else share_ev
    values["chain"] = chain_ev.chain if chain_ev else ""
    values["share"] = share
    values["missing"] = "; ".join(dict.fromkeys(m for m in missing if m))  # "" (nothing missing) is left out
    return Finding(
        rule=rule.id,
        severity=SEVERITIES[level],
        title=render(rule.title, values) or rule.title,
        share=float(share),
        message=_message(rule, values, checked),
        evidence={m.name: values.get(m.name) for m in rule.evidence},
        samples=values["samples"],
        server=values["server"],
        raised_by=tuple(raised_by),
        thresholds=rule.thresholds,
        fix=_fix(rule.fix, facts, values, missing),
        next_steps=tuple(render(s, values) for s in rule.next_steps),
        references=rule.references,
        chain=(chain_ev.hot or "", *chain_ev.callers) if chain_ev else (),
        process=facts.process,
        missing=tuple(dict.fromkeys(m for m in missing if m)),
        confidence=_basis(rule, g, values, confidence(rule, g, values, checked)),
        threads=threads,
        refuted=checked.refuted,
        stacks=share_ev.rows if share_ev else None,
        ambiguous=share_ev is not None and share_ev.latch is not None and share_ev.latch.ambiguous,
        declared=tuple(Declared(m.name, m.kind, kind_of(m.kind).subject(m.spec), m.about) for m in rule.evidence),
    )


def _reads_offcpu(rule: Rule) -> bool:
    """Whether any of the rule's evidence is off-CPU time (what a process seen only off the CPU can fire)."""
    return any(is_offcpu_metric(rule, m.name) for m in rule.evidence)


def _basis(rule: Rule, g: Grade, values: Mapping[str, Any], conf: Confidence) -> Confidence:
    """What a finding's share is of. Graded on off-CPU time: of the off-CPU time, the threshold in threads
    blocked on average, and the evidence behind it is seconds blocked, not samples. Graded on a fact that
    names its own ``basis`` (the host's time): of that."""
    ev = values.get(g.metric) if g.metric else None
    if not is_offcpu_metric(rule, g.metric):  # a fact graded on something else than samples says what
        basis = ev.share_basis() if isinstance(ev, Evidence) else ""
        return replace(conf, samples=None, basis=basis) if basis else conf
    us = ev.us if isinstance(ev, Blocked) else 0
    return replace(conf, samples=None, basis="off-CPU time", unit="threads", blocked_s=round(us / 1e6, 3))


def _threads(rule: Rule, g: Grade, values: Mapping[str, Any], share: float, total: int, facts: Facts) -> float | None:
    """Threads the headline holds on average: what the rule's ``threads`` evidence says (row-lock waiters from
    the server's counters), blocked there (off-CPU time), or on the CPU there (its samples over frequency x
    duration); None for a finding not graded on stacks, or when the capture does not say."""
    if rule.threads:
        named = number(scalar(lookup(values, rule.threads)))
        if named is not None:
            return named
    if is_offcpu_metric(rule, g.metric):
        graded = values.get(g.metric) if g.metric else None
        return graded.avg_threads if isinstance(graded, OffCpuTime) else None
    cores = _cores(total, facts)
    on_stacks = is_stack_metric(rule, g.metric) or (rule.share and rule.share == g.metric)
    if not on_stacks and rule.share and is_stack_metric(rule, rule.share) and share:
        on_stacks = True  # graded on the server's counters, its share is the cause's own CPU time
    return share * cores if on_stacks and cores is not None else None


def _headline_share(rule: Rule, g: Grade, values: Mapping[str, Any], share_ev: StackMatch | None) -> float:
    """The share a finding is headlined with: the stack metric that set the level, else the rule's share."""
    if g.value is not None and (is_stack_metric(rule, g.metric) or (rule.share and rule.share == g.metric)):
        return g.value
    if share_ev:
        return float(share_ev.share)
    graded = values.get(g.metric) if g.metric else None
    if is_offcpu_metric(rule, g.metric) and isinstance(graded, Blocked):
        return graded.share  # of the off-CPU time
    named = number(scalar(values.get(rule.share))) if rule.share else None
    return named if named is not None and 0.0 <= named <= 1.0 else 0.0


def _capped(
    rule: Rule,
    g: Grade,
    total: int,
    raised_by: list[str],
    checked: Checked,
    missing: list[str],
) -> int:
    """The level after raise_if and every cap, each cap said in ``missing``."""
    level = min(g.level + (1 if raised_by else 0), SEVERITIES.index(rule.severity))
    if level and is_stack_metric(rule, g.metric) and g.value is not None and g.value < MIN_STACK_SHARE:
        missing.append(f"{g.metric} is {g.value:.1%} of the samples, under {MIN_STACK_SHARE:.0%}: information only")
        level = 0
    if level > g.limit:  # a share of a nearly idle server is not a problem (grade.MIN_THREADS)
        missing.append(g.held)
        level = g.limit
    cap = rule.unconfirmed_max
    if cap is not None and not checked.confirmed and level > SEVERITIES.index(cap):
        missing.append(f"no confirming fact (waiters, server counters): severity capped at {cap}")
        level = SEVERITIES.index(cap)
    if checked.refuted and level:
        missing.append("refuted by the server's counters: set aside, information only")
        level = 0
    if (
        total < rule.min_samples
        and level > 0
        and not (is_offcpu_metric(rule, g.metric) or is_counter_metric(rule, g.metric))
    ):
        missing.append(f"only {total} samples (rule needs {rule.min_samples}): severity capped at info")
        level = 0
    return level


def _cores(total: int, facts: Facts) -> float | None:
    """How many threads on the CPU all the process's samples are: samples / (frequency x seconds)."""
    freq, seconds = facts.run.record.frequency, facts.run.duration_s
    return total / (freq * seconds) if freq and seconds else None


GROUP_COVER = 0.5  # a symptom joins a group when its causes' evidence covers half of its samples
GROUP_MIN_PART = 0.1  # a cause shares at least a tenth of the symptom's samples


def group(findings: list[Finding], rules: Mapping[str, Rule], weights: np.ndarray | None = None) -> list[Finding]:
    """Grouping within one process: each symptom under the cause that explains most of its samples.

    A rule's ``explains`` lists what it may cause; the stacks decide whether it did here. The
    candidate causes of a symptom are those sharing at least a tenth of its samples; the symptom
    is grouped when they cover half of them together (spin split over two latches is explained),
    under the one sharing most. Without stacks to compare (a counter- or fact-based finding) the
    ``explains`` list alone decides. An info cause (too little evidence of its own) heads no group
    above info, and of two findings that would explain each other (index dives that are mostly
    waits for one latch), the narrower one names the hotspot and is the cause.
    """
    by_rule = {f.rule: f for f in findings}

    def weight(rows: np.ndarray) -> float:
        return float(weights[rows].sum()) if weights is not None else float(len(rows))

    explained: dict[str, str] = {}
    for symptom, sf in by_rule.items():
        cands = [
            c
            for c in by_rule
            if symptom in rules[c].explains
            and c != symptom
            and not by_rule[c].refuted
            and (by_rule[c].severity != "info" or sf.severity == "info")
        ]
        own = sf.stacks if sf.stacks is not None else np.zeros(0, np.int64)
        part: dict[str, float] = {}  # with stacks to compare: the share of the symptom's samples each cause has
        if weight(own):
            total = weight(own)
            theirs = {c: rows for c in cands if (rows := by_rule[c].stacks) is not None}
            part = {c: weight(np.intersect1d(own, rows, assume_unique=True)) / total for c, rows in theirs.items()}
            cands = [c for c in part if part[c] >= GROUP_MIN_PART]
            union = np.unique(np.concatenate([theirs[c] for c in cands])) if cands else own[:0]
            if weight(np.intersect1d(own, union, assume_unique=True)) / total < GROUP_COVER:
                continue
        if cands:
            explained[symptom] = max(cands, key=lambda c: (part.get(c, 0.0), by_rule[c].share, c))
    for symptom, cause in list(explained.items()):
        if explained.get(cause) == symptom and by_rule[cause].share > by_rule[symptom].share:
            del explained[symptom]
    explained = {s: _root(c, explained) for s, c in explained.items()}  # one level: a chain groups under its root
    explained = {s: c for s, c in explained.items() if c != s}
    causes: dict[str, list[str]] = {}
    for symptom, cause in explained.items():
        causes.setdefault(cause, []).append(symptom)
    return [
        replace(
            f,
            explains=tuple(sorted(causes.get(f.rule, ()))),
            explained_by=explained.get(f.rule, ""),
            symptom_of=() if f.rule in explained else _fired_causes(f.rule, by_rule, rules, explained),
        )
        for f in findings
    ]


def _fired_causes(
    symptom: str, by_rule: Mapping[str, Finding], rules: Mapping[str, Rule], explained: Mapping[str, str]
) -> tuple[str, ...]:
    """Findings above info whose rules name ``symptom`` as theirs, though the stacks did not group it under
    them (and that it does not itself explain): it then ranks after them (findings/model.py ``ordered``)."""
    return tuple(
        sorted(
            c
            for c, cf in by_rule.items()
            if c != symptom and symptom in rules[c].explains and cf.severity != "info" and explained.get(c) != symptom
        )
    )


def _root(cause: str, explained: Mapping[str, str]) -> str:
    seen = {cause}
    while cause in explained and explained[cause] not in seen:
        cause = explained[cause]
        seen.add(cause)
    return cause


def _stack_evidence(rule: Rule, values: Mapping[str, Any], first: tuple[str, ...]) -> StackMatch | None:
    """The first stack or latch evidence with samples: ``first``, then the metrics, then the others."""
    names = list(first) + (list(rule.thresholds.metrics) if rule.thresholds else [])
    stacks = [m.name for m in rule.evidence if kind_of(m.kind).stacks]
    names += stacks
    for name in names:
        value = values.get(name)
        if name in stacks and isinstance(value, StackMatch) and value.count:
            return value
    return None


def _message(rule: Rule, values: Mapping[str, Any], checked: Checked) -> str:
    parts = [render(rule.message, values).strip()]
    parts += [render(g.text, values).strip() for g in rule.message_if if all(holds(c, values) for c in g.conditions)]
    if checked.refuted:
        parts.append(f"Set aside: the server's counters rule it out ({'; '.join(checked.refuted)}).")
    return " ".join(p for p in parts if p)


def _fix_applies(item: FixItem, facts: Facts) -> bool:
    if item.when is None or facts.family is None:
        return True
    spec = for_family(item.when, facts.family)
    return spec is not None and in_range(facts.version, spec)


def _fix(
    items: tuple[FixItem, ...], facts: Facts, values: Mapping[str, Any], missing: list[str]
) -> tuple[FixStep, ...]:
    """The fix steps for this server, each saying which variant's servers it is for (``applies_to``);
    when the server is unknown, every variant.

    A step that needs a value not known here is left out (a code line that needs one goes, and a code
    step left without code goes), and a variant left without its code, or without any step, goes too.
    With the version known, a variant using a variable, schema or statement that server does not have
    (rules/knowledge/server-features.yaml) is left out, and ``missing`` says so.
    """
    out: list[FixStep] = []
    for item in items:
        if not _fix_applies(item, facts) or not all(holds(c, values) for c in item.conditions):
            continue
        steps = [FixStep(s.kind, render(s.text, values, code=s.code).strip(), item.applies_to) for s in item.steps]
        steps = [s for s in steps if s.text and not step_problem(s.kind, s.text)]
        if not steps or (any(s.code for s in item.steps) and not any(s.code for s in steps)):
            missing.append(f"a fix{f' ({item.label})' if item.label else ''} left out: it needs a value not known here")
            continue
        rejected = absent(steps, facts.family, facts.version)
        if rejected:
            missing.append(
                f"fix '{item.label or steps[0].text.splitlines()[0][:40]}' left out: {', '.join(rejected)} "
                f"not in {_server_text(facts)}"
            )
            continue
        out += steps
    return tuple(out)


def _server_text(facts: Facts) -> str:
    if facts.family is None:
        return "unknown server"
    name = FAMILY_NAMES.get(facts.family, facts.family)
    return f"{name} {facts.version_text or '.'.join(map(str, facts.version)) or '(version unknown)'}"

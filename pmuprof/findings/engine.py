"""Evaluate rules against a Profile, per target process, into ordered Findings."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from ..model.profile import Profile
from .facts import Facts, facts_for, number
from .loader import load_rules
from .matchers import StackIndex, compute
from .model import Finding, ordered
from .patterns import lock_wrappers
from .schema import SEVERITIES, Condition, FixItem, Rule
from .template import lookup, render, scalar
from .versions import in_range

MIN_PROCESS_SHARE = 0.02  # with several processes, ignore ones under 2 % of the samples
_FAMILY_NAMES = {"mysql": "MySQL", "percona": "Percona Server", "mariadb": "MariaDB"}


def evaluate(profile: Profile, rules: Iterable[Rule] | None = None) -> list[Finding]:
    """All findings for the profile: per process label when there are several; ordered."""
    rules = tuple(load_rules() if rules is None else rules)
    processes = profile.processes()
    total = profile.total or 1
    findings: list[Finding] = []
    for process in processes:
        index = StackIndex(profile, process)
        if len(processes) > 1 and index.total / total < MIN_PROCESS_SHARE:
            continue
        facts = facts_for(profile, process)
        for rule in rules:
            finding = evaluate_rule(rule, index, facts)
            if finding is not None:
                findings.append(finding)
    return ordered(findings)


def applies(rule: Rule, facts: Facts) -> bool:
    """Unknown server → applies; a known family must be listed (Percona falls back to MySQL)."""
    if rule.servers is None or facts.family is None:
        return True
    spec = rule.servers.get(facts.family)
    if spec is None and facts.family == "percona":
        spec = rule.servers.get("mysql")
    return spec is not None and in_range(facts.version, spec)


def holds(cond: Condition, values: Mapping[str, Any]) -> bool:
    """A condition on evidence; unknown evidence never holds."""
    raw = lookup(values, cond.evidence)
    if cond.op == "present":
        return (scalar(raw) is not None) == bool(cond.value)
    value = scalar(raw)
    if value is None:
        return False
    if cond.op in ("equals", "not_equals", "in"):
        wanted = cond.value if cond.op == "in" else (cond.value,)
        same = any(_same(value, w) for w in wanted)
        return not same if cond.op == "not_equals" else same
    num = raw.get("number") if isinstance(raw, Mapping) and "number" in raw else number(value)
    limit = number(cond.value)
    if num is None or limit is None:
        return False
    return {"min": num >= limit, "max": num <= limit, "above": num > limit, "below": num < limit}[cond.op]


def _same(value: Any, wanted: Any) -> bool:
    a, b = number(value), number(wanted)
    if a is not None and b is not None and not isinstance(value, str) and not isinstance(wanted, str):
        return a == b
    if isinstance(value, bool) or isinstance(wanted, bool):
        return a == b
    return str(value).strip().lower() == str(wanted).strip().lower()


def _level(rule: Rule, values: Mapping[str, Any]) -> int | None:
    """Index into SEVERITIES from the thresholds, or the rule's severity without thresholds."""
    th = rule.thresholds
    if th is None:
        return SEVERITIES.index(rule.severity)
    metrics = [number(scalar(values.get(m))) for m in th.metrics]
    present = [m for m in metrics if m is not None]
    if not present:
        return None
    value = min(present) if th.below else max(present)
    for level in ("critical", "warning", "info"):
        bound = getattr(th, level)
        if bound is not None and (value <= bound if th.below else value >= bound):
            return SEVERITIES.index(level)
    return None


def evaluate_rule(rule: Rule, index: StackIndex, facts: Facts) -> Finding | None:
    """One rule on one process: None when it does not apply or does not fire."""
    if not applies(rule, facts):
        return None
    missing: list[str] = []
    skip = lock_wrappers(rule.skip_callers.patterns)
    values: dict[str, Any] = {m.name: compute(m, index, facts, skip, missing) for m in rule.evidence}
    values.update(samples=index.total, process=facts.process, server=_server_text(facts))
    if not all(holds(c, values) for c in rule.fire_all):
        return None
    if rule.fire_any and not any(holds(c, values) for c in rule.fire_any):
        return None
    level = _level(rule, values)
    if level is None:
        return None
    raised_by = [c.evidence for c in rule.raise_if if holds(c, values)]
    if raised_by:
        level += 1
    level = min(level, SEVERITIES.index(rule.severity))
    if index.total < rule.min_samples and level > 0:
        missing.append(f"only {index.total} samples (rule needs {rule.min_samples}): severity capped at info")
        level = 0
    share_ev = _stack_evidence(rule, values, (rule.share,) if rule.share else ())
    chain_ev = _stack_evidence(rule, values, rule.chain) if rule.chain else share_ev
    values["chain"] = chain_ev.get("chain", "") if chain_ev else ""
    values["share"] = float(share_ev["share"]) if share_ev else 0.0  # the metric that fired, for messages
    values["missing"] = "; ".join(dict.fromkeys(m for m in missing if m)) or "nothing"
    return Finding(
        rule=rule.id, severity=SEVERITIES[level], title=rule.title,
        share=float(share_ev["share"]) if share_ev else 0.0,
        message=_message(rule, values),
        evidence=_evidence(rule, values, raised_by),
        fix=_fix(rule.fix, facts, values),
        next_steps=tuple(render(s, values) for s in rule.next_steps),
        references=rule.references,
        chain=tuple([chain_ev["hot"], *chain_ev["callers"]]) if chain_ev else (),
        process=facts.process,
        missing=tuple(dict.fromkeys(m for m in missing if m)),
    )


def _stack_evidence(rule: Rule, values: Mapping[str, Any], first: tuple[str, ...]) -> Mapping[str, Any] | None:
    """The first stack evidence with samples: ``first``, then the metrics, then the others."""
    names = list(first) + (list(rule.thresholds.metrics) if rule.thresholds else [])
    names += [m.name for m in rule.evidence if m.kind == "stack"]
    stacks = {m.name for m in rule.evidence if m.kind == "stack"}
    for name in names:
        value = values.get(name)
        if name in stacks and isinstance(value, Mapping) and value.get("count"):
            return value
    return None


def _message(rule: Rule, values: Mapping[str, Any]) -> str:
    parts = [render(rule.message, values).strip()]
    parts += [render(g.text, values).strip() for g in rule.message_if if all(holds(c, values) for c in g.conditions)]
    return " ".join(p for p in parts if p)


def _fix_applies(item: FixItem, facts: Facts) -> bool:
    if item.when is None or facts.family is None:
        return True
    spec = item.when.get(facts.family) or (item.when.get("mysql") if facts.family == "percona" else None)
    return spec is not None and in_range(facts.version, spec)


def _fix(items: tuple[FixItem, ...], facts: Facts, values: Mapping[str, Any]) -> str:
    """Fix text for this server; when the server is unknown, every variant with its label."""
    out = []
    for item in items:
        if not _fix_applies(item, facts) or not all(holds(c, values) for c in item.conditions):
            continue
        text = render(item.text, values).strip()
        label = item.label if (facts.family is None or not facts.version or item.when is None) else ""
        out.append(f"{label}:\n{text}" if label and "\n" in text else f"{label}: {text}" if label else text)
    return "\n\n".join(out)


def _evidence(rule: Rule, values: Mapping[str, Any], raised_by: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for m in rule.evidence:
        value = values.get(m.name)
        out[m.name] = _clean(value)
    out["samples"] = values["samples"]
    out["server"] = values["server"]
    if raised_by:
        out["raised_by"] = raised_by
    if rule.thresholds:
        th = rule.thresholds
        out["thresholds"] = {k: getattr(th, k) for k in ("info", "warning", "critical") if getattr(th, k) is not None}
        out["thresholds"]["metric"] = list(th.metrics)
        out["thresholds"]["below"] = th.below
    return out


def _clean(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, Mapping):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def _server_text(facts: Facts) -> str:
    if facts.family is None:
        return "unknown server"
    name = _FAMILY_NAMES.get(facts.family, facts.family)
    return f"{name} {facts.version_text or '.'.join(map(str, facts.version)) or '(version unknown)'}"

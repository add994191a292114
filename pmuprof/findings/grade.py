"""How severe and how sure: conditions on evidence, the threshold that set the level, the server facts that
confirm or refute it, and confidence.

The headline share of a finding is the value of the metric that set its severity. A finding resting on a stack
share stays info below 1 % of the samples, and below MIN_THREADS of its level in threads on the CPU, as does one
resting on a share the analysis measured over the samples (a share of a nearly idle server is not a problem); a
rule may cap what it says without a confirming fact (the server's counters over the window, waiters in the
processlist), and a refuting one sets the finding aside.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any
from collections.abc import Mapping

from .evidence import Evidence, Fact
from .facts import number
from .kinds import kind_of
from .model import Confidence
from .schema import SEVERITIES, Condition, Rule
from .template import lookup, render, scalar

MIN_STACK_SHARE = 0.01  # below this a stack-share finding is information, never a warning
# Severity in absolute terms: above info, a finding graded on a stack share (or an analysis share of the
# samples: ANALYSIS_SHARES) needs its samples to be this many threads on the CPU on average (samples /
# (frequency x seconds)): 5 % of one CPU for a warning, a quarter of one for critical. A third of a server idling
# at 2 % of a CPU is 0.007 threads: information.
MIN_THREADS = {"warning": 0.05, "critical": 0.25}


@dataclass(frozen=True)
class Grade:
    level: int  # index into SEVERITIES
    metric: str | None  # the evidence whose value set the level (None: a fixed-severity rule)
    value: float | None
    bound: float | None  # the threshold that value passed
    limit: int = len(SEVERITIES) - 1  # the highest level its absolute weight allows (MIN_THREADS)
    held: str = ""  # why the limit is below what the share alone gives ("" when it is not)


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
    num = raw.number if isinstance(raw, Fact) else number(value)  # a looked-up fact carries its number
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


def grade(
    rule: Rule,
    values: Mapping[str, Any],
    cores: float | None = None,
    total: int | None = None,
    recorded_cores: float | None = None,
) -> Grade | None:
    """The level the thresholds give (the metric and bound that gave it), or the rule's fixed severity.

    Each metric is held to the levels of its scale (off-CPU time to ``thresholds.offcpu``, the server's counters
    over the window to ``thresholds.counters``, when the rule has them; else the main levels); on one scale the
    largest value decides, across scales the gravest level wins, and of two metrics at that level the one
    furthest past its bound. A stack share is also held to MIN_THREADS: ``cores`` is how many threads on the
    CPU all the process's samples are (samples / (frequency x seconds)), None when the capture does not say;
    ``recorded_cores`` the same for all the recording's samples, what an analysis share (ANALYSIS_SHARES) is a
    fraction of."""
    th = rule.thresholds
    if th is None:
        return Grade(SEVERITIES.index(rule.severity), None, None, None)
    candidates = [(m, number(scalar(values.get(m)))) for m in th.metrics]
    present = [(m, v) for m, v in candidates if v is not None]
    if not present:
        return None
    scales: dict[str, list[tuple[str, float]]] = {}
    for m, v in present:
        scales.setdefault(_scale(rule, m), []).append((m, v))
    picked = [(min if th.below else max)(mv, key=lambda x: x[1]) for mv in scales.values()]
    leveled = [_level(m, v, th.bounds(_scale(rule, m)), th.below) for m, v in picked]
    graded = [_held(rule, g, cores, total, recorded_cores) for g in leveled if g is not None]
    return max(graded, key=lambda g: (min(g.level, g.limit), g.level, _margin(g, th.below))) if graded else None


def _scale(rule: Rule, metric: str) -> str:
    """Which levels a metric is held to: 'offcpu', 'counters' (when the rule has them) or 'main'."""
    th = rule.thresholds
    if th is not None and th.offcpu and is_offcpu_metric(rule, metric):
        return "offcpu"
    m = rule.matcher(metric)
    if th is not None and th.counters and m is not None and m.kind == "window":
        return "counters"
    return "main"


def _held(
    rule: Rule, g: Grade, cores: float | None, total: int | None = None, recorded_cores: float | None = None
) -> Grade:
    """A share of the samples' grade (a stack share, or an analysis share of the whole recording's) with the
    highest level its threads on the CPU allow (MIN_THREADS), and any metric's but the counters' and off-CPU
    time's at info when the process has fewer samples than the rule needs."""
    if is_offcpu_metric(rule, g.metric) or is_counter_metric(rule, g.metric):
        return g
    if total is not None and total < rule.min_samples and g.level:
        return replace(
            g, limit=0, held=f"only {total} samples (rule needs {rule.min_samples}): severity capped at info"
        )
    if is_stack_metric(rule, g.metric):
        of = cores
    elif is_analysis_share(rule, g.metric):
        of = recorded_cores if recorded_cores is not None else cores
    else:
        return g
    if of is None or g.value is None:
        return g
    threads = g.value * of
    limit = g.level
    while limit and threads < MIN_THREADS.get(SEVERITIES[limit], 0.0):
        limit -= 1
    if limit == g.level:
        return g
    need = MIN_THREADS[SEVERITIES[g.level]]
    why = (
        f"{g.metric} is {threads:.2f} threads on the CPU on average, under the {need:g} a {SEVERITIES[g.level]} "
        f"finding needs: {SEVERITIES[limit]}"
    )
    return replace(g, limit=limit, held=why)


def _level(metric: str, value: float, bounds: Mapping[str, float | None], below: bool) -> Grade | None:
    for level in ("critical", "warning", "info"):
        bound = bounds[level]
        if bound is not None and (value <= bound if below else value >= bound):
            return Grade(SEVERITIES.index(level), metric, value, bound)
    return None


def _margin(g: Grade, below: bool) -> float:
    if not g.bound or g.value is None:
        return 0.0
    return g.bound / g.value if below and g.value else g.value / g.bound


def is_offcpu_metric(rule: Rule, metric: str | None) -> bool:
    """Whether the evidence is off-CPU time (an ``offcpu`` matcher or an off-CPU derived fact)."""
    m = rule.matcher(metric) if metric else None
    return m is not None and kind_of(m.kind).offcpu(m.spec)


def is_counter_metric(rule: Rule, metric: str | None) -> bool:
    """Whether the evidence is the server's counters over the window (graded in its own units, with no sample
    minimum: the counters do not depend on how many samples perf took)."""
    m = rule.matcher(metric) if metric else None
    return m is not None and m.kind == "window"


def is_stack_metric(rule: Rule, metric: str | None) -> bool:
    matcher = rule.matcher(metric) if metric else None
    kind = kind_of(matcher.kind) if matcher is not None else None
    return kind is not None and kind.share  # a share of the samples (stack, latch, fence)


# Shares the analysis measures over all the recording's samples (analysis.json skid): held to MIN_THREADS like a
# stack share. A nearly idle 10.2.11 whose purge workers spun 22 % of its 278 samples (0.04 threads on the CPU)
# was graded critical on skid.pause_share and led a query-cache incident's report.
ANALYSIS_SHARES = frozenset({"skid.pause_share", "skid.fence_share", "skid.lock_share"})


def is_analysis_share(rule: Rule, metric: str | None) -> bool:
    """Whether the metric is one of ANALYSIS_SHARES (an ``analysis`` path)."""
    matcher = rule.matcher(metric) if metric else None
    return matcher is not None and matcher.kind == "analysis" and str(matcher.spec) in ANALYSIS_SHARES


@dataclass(frozen=True)
class Checked:
    """What the server's facts said of a finding, as its rule words them."""

    confirmed: tuple[str, ...] = ()  # confirm items that held
    not_confirmed: tuple[str, ...] = ()  # confirm items that could be read and did not hold
    refuted: tuple[str, ...] = ()  # refute items that held: the finding is set aside
    would_decide: tuple[str, ...] = ()  # what would decide it, when the input has none of it (a bare perf.data)


def check(rule: Rule, values: Mapping[str, Any]) -> Checked:
    """The rule's confirm and refute items against the evidence. An item that reads evidence not known here
    neither holds nor fails; when no item can be read, ``would_decide`` names what they read."""
    confirmed, not_confirmed, unread = [], [], []
    for item in rule.confirm:
        if _unknown(rule, item.conditions, values):
            unread.append(item)
        elif all(holds(c, values) for c in item.conditions):
            confirmed.append(render(item.text, values).strip())
        else:
            not_confirmed.append(render(item.text, values).strip())
    refuted = []
    for item in rule.refute:
        if _unknown(rule, item.conditions, values):
            unread.append(item)
        elif all(holds(c, values) for c in item.conditions):
            refuted.append(render(item.text, values).strip())
    items = rule.confirm + rule.refute
    would: list[str] = []
    if items and len(unread) == len(items):
        for item in unread:
            would += [d for d in _unknown(rule, item.conditions, values) if d not in would]
    return Checked(tuple(confirmed), tuple(not_confirmed), tuple(refuted), tuple(would))


def _unknown(rule: Rule, conditions: tuple[Condition, ...], values: Mapping[str, Any]) -> list[str]:
    """What the conditions read that is not known here, as the rule's docs say it."""
    out = []
    for c in conditions:
        name = c.evidence.split(".")[0]
        m = rule.matcher(name)
        if m is not None and c.op != "present" and scalar(lookup(values, c.evidence)) is None:
            out.append(kind_of(m.kind).doc(m.spec))
    return out


def confidence(rule: Rule, g: Grade, values: Mapping[str, Any], checked: Checked) -> Confidence:
    """Samples behind the headline, its margin over the threshold, and what the server's facts said: high needs
    a strong headline and a confirming fact (or a rule only its own evidence decides); a rule whose deciding
    facts the input lacks is at most medium; a refuted one is low."""
    ev = values.get(g.metric) if g.metric else None
    samples = ev.counted() if isinstance(ev, Evidence) else None
    margin = round(g.value / g.bound, 2) if g.value is not None and g.bound else None
    strong = (margin is None or margin >= 2) and (samples is None or samples >= 100)
    if checked.refuted:
        level = "low"
    elif checked.would_decide:
        level = "medium" if strong else "low"
    else:
        sure = checked.confirmed or rule.decided_by
        level = "high" if strong and sure else "medium" if strong or checked.confirmed else "low"
    return Confidence(
        samples,
        values.get("samples"),
        g.bound,
        margin,
        checked.confirmed,
        checked.not_confirmed,
        level,
        refuted=checked.refuted,
        decided_by=rule.decided_by,
        would_decide=checked.would_decide,
        value=round(g.value, 4) if g.value is not None else None,
    )

"""Rule file schema: validate a parsed YAML rule (unknown keys → file:line) into a frozen Rule."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from collections.abc import Mapping

from ..errors import RuleError
from ..model.server import FAMILIES, FAMILY_NAMES
from .kinds import KINDS, kind_of
from .kinds.base import Matcher
from .patterns import PatternSet
from .steps import STEP_KINDS, FixStep, step_problem
from .template import check_template
from .versions import parse_spec
from .yamlload import LDict, LList

SEVERITIES = ("info", "warning", "critical")
OPERATORS = ("min", "max", "above", "below", "equals", "not_equals", "in", "present")
TOP_KEYS = {
    "id": True,
    "title": True,
    "severity": True,
    "evidence": True,
    "message": True,
    "doc": True,
    "applies_to": False,
    "fire": False,
    "thresholds": False,
    "raise_if": False,
    "share": False,
    "min_samples": False,
    "skip_callers": False,
    "chain": False,
    "message_if": False,
    "fix": False,
    "explains": False,
    "confirm": False,
    "refute": False,
    "decided_by": False,
    "unconfirmed_max": False,
    "threads": False,
    "next_steps": False,
    "references": False,
}
DOC_KEYS = ("symptom", "why", "fix", "caveats")
# What the engine (engine.evaluate_rule, engine._evidence) adds beside a rule's evidence: names every
# template and condition may use, and keys of a finding's evidence. Evidence named like one of them
# would be overwritten, so the schema refuses those names.
TEMPLATE_NAMES = ("samples", "process", "missing", "chain", "server", "share")
EVIDENCE_KEYS = ("samples", "server", "raised_by", "thresholds")
RESERVED_NAMES = tuple(dict.fromkeys(TEMPLATE_NAMES + EVIDENCE_KEYS))
_SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")


@dataclass(frozen=True)
class Condition:
    evidence: str  # evidence name, optionally .field
    op: str
    value: Any


@dataclass(frozen=True)
class Thresholds:
    metrics: tuple[str, ...]
    info: float | None
    warning: float | None
    critical: float | None
    below: bool = False
    # levels for the off-CPU metrics (threads blocked on average) when a rule grades on-CPU shares and
    # off-CPU time together: (info, warning, critical); () = the levels above serve every metric
    offcpu: tuple[float | None, ...] = ()
    # levels for the server's counters over the window (``window`` evidence: a rate, a ratio) when a rule grades
    # them beside stack shares; () = the levels above serve every metric
    counters: tuple[float | None, ...] = ()

    def bounds(self, scale: str | bool) -> dict[str, float | None]:
        """The level -> bound map of a scale: 'offcpu' / 'counters' (a rule's own levels for them, when it has
        them) or 'main'; True means 'offcpu'."""
        scale = "offcpu" if scale is True else scale or "main"
        own = self.offcpu if scale == "offcpu" else self.counters if scale == "counters" else ()
        if own:
            return dict(zip(("info", "warning", "critical"), own))
        return {"info": self.info, "warning": self.warning, "critical": self.critical}


@dataclass(frozen=True)
class FixItem:
    """A variant of a rule's fix: its steps, for the servers of ``when``, when ``conditions`` hold."""

    steps: tuple[FixStep, ...]
    label: str = ""
    when: Mapping[str, str] | None = None  # family -> version spec
    conditions: tuple[Condition, ...] = ()

    @property
    def applies_to(self) -> str:
        """Which servers the variant is for: its label, else its version ranges in words ("" = any)."""
        return self.label or ", ".join(
            FAMILY_NAMES[f] + ("" if s == "*" else f" {s}") for f, s in (self.when or {}).items()
        )


@dataclass(frozen=True)
class Guarded:
    text: str
    conditions: tuple[Condition, ...]


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    severity: str
    path: str
    evidence: tuple[Matcher, ...]
    message: str
    doc: Mapping[str, str]
    servers: Mapping[str, str] | None = None
    fire_all: tuple[Condition, ...] = ()
    fire_any: tuple[Condition, ...] = ()
    thresholds: Thresholds | None = None
    raise_if: tuple[Condition, ...] = ()
    share: str | None = None
    chain: tuple[str, ...] = ()
    min_samples: int = 200
    skip_callers: PatternSet = PatternSet.of(())
    message_if: tuple[Guarded, ...] = ()
    fix: tuple[FixItem, ...] = ()
    next_steps: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    explains: tuple[str, ...] = ()  # symptom rules this one is the cause of (grouped under it in reports)
    confirm: tuple[Guarded, ...] = ()  # server facts that confirm the cause (each text says what was seen)
    refute: tuple[Guarded, ...] = ()  # server facts that rule it out: the finding is set aside, never the verdict
    decided_by: str = ""  # a rule no server counter bears on: what decides it (the stacks, the host's counters)
    unconfirmed_max: str | None = None  # the highest severity without any confirming fact
    threads: str | None = None  # evidence (name or name.field) that is the threads the cause holds (its weight)

    def matcher(self, name: str) -> Matcher | None:
        return next((m for m in self.evidence if m.name == name), None)


class _Ctx:
    """Where we are in a file, for error messages."""

    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, line: int, msg: str, fix: str = "see docs/rules.md 'Writing rules'") -> RuleError:
        return RuleError(f"{self.path}:{line}: {msg}", fix)

    def mapping(self, value: Any, line: int, what: str) -> LDict:
        if not isinstance(value, LDict):
            raise self.fail(line, f"{what} must be a mapping")
        return value

    def seq(self, value: Any, line: int, what: str) -> LList:
        if not isinstance(value, LList):
            raise self.fail(line, f"{what} must be a list")
        return value

    def text(self, value: Any, line: int, what: str) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.fail(line, f"{what} must be a non-empty string")
        return value

    def keys(self, data: LDict, allowed: tuple[str, ...] | Mapping[str, Any], what: str) -> None:
        for key in data:
            if key not in allowed:
                raise self.fail(data.line_of(key), f"unknown key '{key}' in {what}", f"allowed: {', '.join(allowed)}")

    def strings(self, value: Any, line: int, what: str) -> tuple[str, ...]:
        return _strings(self, value, line, what)

    def patterns(self, value: Any, line: int, what: str) -> PatternSet:
        return _patterns(self, value, line, what)

    def template(self, text: str, line: int, names: set[str]) -> str:
        problem = check_template(text, names)
        if problem:
            raise self.fail(line, f"bad template: {problem}")
        return text


def _strings(ctx: _Ctx, value: Any, line: int, what: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    items = ctx.seq(value, line, what)
    for item, item_line in zip(items, items.item_lines):
        ctx.text(item, item_line, f"each item of {what}")
    return tuple(items)


def _patterns(ctx: _Ctx, value: Any, line: int, what: str) -> PatternSet:
    pats = _strings(ctx, value, line, what)
    try:
        return PatternSet.of(pats)
    except re.error as err:
        raise ctx.fail(line, f"bad regex in {what}: {err}") from err


def _matcher(ctx: _Ctx, name: str, data: Any, line: int) -> Matcher:
    if not _NAME.match(name):
        raise ctx.fail(line, f"evidence name '{name}' must be lower_snake_case")
    if name in RESERVED_NAMES:
        raise ctx.fail(
            line,
            f"evidence name '{name}' is reserved: the engine sets it for every rule",
            f"rename the evidence; reserved: {', '.join(RESERVED_NAMES)}",
        )
    data = ctx.mapping(data, line, f"evidence '{name}'")
    kinds = [k for k in data if k != "about"]
    ctx.keys(data, tuple(KINDS) + ("about",), f"evidence '{name}'")
    if len(kinds) != 1:
        raise ctx.fail(data.line, f"evidence '{name}' needs exactly one matcher of: {', '.join(KINDS)}")
    kind = kinds[0]
    about = ctx.text(data["about"], data.line_of("about"), "about") if "about" in data else ""
    spec = kind_of(kind).validate(ctx, data[kind], data.line_of(kind))
    return Matcher(name, kind, spec, about)


def _conditions(ctx: _Ctx, value: Any, line: int, what: str, names: set[str]) -> tuple[Condition, ...]:
    out = []
    items = ctx.seq(value, line, what)
    for item, item_line in zip(items, items.item_lines):
        item = ctx.mapping(item, item_line, f"each item of {what}")
        ctx.keys(item, ("evidence",) + OPERATORS, f"a condition in {what}")
        ops = [k for k in item if k in OPERATORS]
        if "evidence" not in item or len(ops) != 1:
            raise ctx.fail(item.line, f"a condition is {{evidence: NAME, <one of {', '.join(OPERATORS)}>: VALUE}}")
        ref = ctx.text(item["evidence"], item.line_of("evidence"), "evidence")
        if ref.split(".")[0] not in names:
            raise ctx.fail(item.line_of("evidence"), f"condition refers to unknown evidence '{ref}'")
        out.append(Condition(ref, ops[0], _plain(item[ops[0]])))
    return tuple(out)


def _plain(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_plain(v) for v in value)
    return value


def _servers(ctx: _Ctx, value: Any, line: int, what: str) -> dict[str, str]:
    data = ctx.mapping(value, line, what)
    ctx.keys(data, FAMILIES, what)
    out = {}
    for family, spec in data.items():
        spec = " | ".join(str(s) for s in spec) if isinstance(spec, list) else str(spec)
        try:
            parse_spec(spec)
        except ValueError as err:
            raise ctx.fail(data.line_of(family), f"bad version range for {family}: {err}") from err
        out[family] = spec
    return out


def _thresholds(ctx: _Ctx, value: Any, line: int, names: set[str]) -> Thresholds:
    data = ctx.mapping(value, line, "thresholds")
    ctx.keys(data, ("metric", "info", "warning", "critical", "below", "offcpu", "counters"), "thresholds")
    if "metric" not in data:
        raise ctx.fail(data.line, "thresholds needs 'metric' (an evidence name or a list of them)")
    metrics = _strings(ctx, data["metric"], data.line_of("metric"), "thresholds.metric")
    for metric in metrics:
        if metric not in names:
            raise ctx.fail(data.line_of("metric"), f"thresholds.metric refers to unknown evidence '{metric}'")
    levels = _levels(ctx, data, "thresholds")
    scales: dict[str, tuple[float | None, ...]] = {}
    for key in ("offcpu", "counters"):
        if key in data:
            sub = ctx.mapping(data[key], data.line_of(key), f"thresholds.{key}")
            ctx.keys(sub, ("info", "warning", "critical"), f"thresholds.{key}")
            scales[key] = tuple(_levels(ctx, sub, f"thresholds.{key}").values())
    return Thresholds(
        metrics,
        levels["info"],
        levels["warning"],
        levels["critical"],
        bool(data.get("below", False)),
        scales.get("offcpu", ()),
        scales.get("counters", ()),
    )


def _levels(ctx: _Ctx, data: Any, what: str) -> dict[str, float | None]:
    levels = {}
    for key in ("info", "warning", "critical"):
        if key in data and not isinstance(data[key], (int, float)):
            raise ctx.fail(data.line_of(key), f"{what}.{key} must be a number")
        levels[key] = float(data[key]) if key in data else None
    if all(v is None for v in levels.values()):
        raise ctx.fail(data.line, f"{what} needs at least one of info, warning, critical")
    return levels


def _fix(ctx: _Ctx, value: Any, line: int, names: set[str]) -> tuple[FixItem, ...]:
    out = []
    items = ctx.seq(value, line, "fix")
    for item, item_line in zip(items, items.item_lines):
        if isinstance(item, str) or (isinstance(item, LDict) and "text" in item):
            at = item.line_of("text") if isinstance(item, LDict) else item_line
            raise ctx.fail(
                at,
                "a fix variant holds 'steps:', not text: the old 'text' form is gone",
                "write steps: [{sql: ...}, {my.cnf: ...}, {shell: ...}, {note: ...}]; see docs/rules.md",
            )
        item = ctx.mapping(item, item_line, "each fix item")
        ctx.keys(item, ("steps", "label", "when", "if"), "a fix item")
        if "steps" not in item:
            raise ctx.fail(item.line, "a fix variant needs 'steps' (a list of sql / my.cnf / shell / note steps)")
        steps = _steps(ctx, item["steps"], item.line_of("steps"), names)
        when = _servers(ctx, item["when"], item.line_of("when"), "fix.when") if "when" in item else None
        conds = _conditions(ctx, item["if"], item.line_of("if"), "fix.if", names) if "if" in item else ()
        label = ctx.text(item["label"], item.line_of("label"), "fix.label") if "label" in item else ""
        out.append(FixItem(steps, label, when, conds))
    return tuple(out)


def _steps(ctx: _Ctx, value: Any, line: int, names: set[str]) -> tuple[FixStep, ...]:
    """Each step is a one-key mapping: its kind and its text; code holds only code of its kind."""
    out = []
    items = ctx.seq(value, line, "fix.steps")
    if not items:
        raise ctx.fail(line, "fix.steps must not be empty")
    for item, item_line in zip(items, items.item_lines):
        item = ctx.mapping(item, item_line, "each fix step")
        if len(item) != 1 or next(iter(item)) not in STEP_KINDS:
            bad = ", ".join(f"'{k}'" for k in item if k not in STEP_KINDS) or f"{len(item)} keys"
            raise ctx.fail(
                item.line,
                f"unknown fix step kind {bad}: a step is one of {', '.join(STEP_KINDS)}",
                "e.g. - sql: SET GLOBAL x = 1;  or  - note: why, in prose",
            )
        kind = next(iter(item))
        at = item.line_of(kind)
        text = ctx.template(ctx.text(item[kind], at, f"a {kind} step"), at, names)
        problem = step_problem(kind, text)
        if problem:
            raise ctx.fail(at, f"{kind} step: {problem}")
        out.append(FixStep(kind, text.strip()))
    return tuple(out)


def _guarded(ctx: _Ctx, value: Any, line: int, names: set[str], what: str = "message_if") -> tuple[Guarded, ...]:
    out = []
    items = ctx.seq(value, line, what)
    for item, item_line in zip(items, items.item_lines):
        item = ctx.mapping(item, item_line, f"each {what} item")
        ctx.keys(item, ("if", "text"), f"a {what} item")
        if "if" not in item or "text" not in item:
            raise ctx.fail(item.line, f"{what} items need 'if' and 'text'")
        text = ctx.template(ctx.text(item["text"], item.line_of("text"), "text"), item.line_of("text"), names)
        out.append(Guarded(text, _conditions(ctx, item["if"], item.line_of("if"), f"{what}.if", names)))
    return tuple(out)


def build_rule(data: Any, path: str, stem: str | None = None) -> Rule:
    """Validate one parsed rule file into a Rule; every problem names file:line."""
    ctx = _Ctx(path)
    data = ctx.mapping(data, 1, "a rule file")
    ctx.keys(data, TOP_KEYS, "the rule")
    for key, required in TOP_KEYS.items():
        if required and key not in data:
            raise ctx.fail(data.line, f"missing required key '{key}'")
    rid = ctx.text(data["id"], data.line_of("id"), "id")
    if not _SLUG.match(rid):
        raise ctx.fail(data.line_of("id"), f"id '{rid}' must be a lower-case slug like 'innodb-spin-wait'")
    if stem is not None and stem != rid:
        raise ctx.fail(data.line_of("id"), f"id '{rid}' does not match the file name '{stem}.yaml'")
    severity = data["severity"]
    if severity not in SEVERITIES:
        raise ctx.fail(data.line_of("severity"), f"severity must be one of {', '.join(SEVERITIES)}")
    ev = ctx.mapping(data["evidence"], data.line_of("evidence"), "evidence")
    matchers = tuple(_matcher(ctx, name, spec, ev.line_of(name)) for name, spec in ev.items())
    names = {m.name for m in matchers} | set(TEMPLATE_NAMES)
    if "thresholds" not in data and "fire" not in data:
        raise ctx.fail(data.line, "a rule needs 'thresholds' or 'fire' (else it would always fire)")
    if "decided_by" in data and any(k in data for k in ("confirm", "refute")):
        raise ctx.fail(data.line_of("decided_by"), "decided_by is for rules without confirm / refute")
    return Rule(
        id=rid,
        title=ctx.template(ctx.text(data["title"], data.line_of("title"), "title"), data.line_of("title"), names),
        severity=severity,
        path=path,
        evidence=matchers,
        message=ctx.template(
            ctx.text(data["message"], data.line_of("message"), "message"), data.line_of("message"), names
        ),
        doc=_doc(ctx, data["doc"], data.line_of("doc")),
        **_optional(ctx, data, names),
    )


def _optional(ctx: _Ctx, data: LDict, names: set[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    ln = data.line_of
    if "applies_to" in data:
        applies = ctx.mapping(data["applies_to"], ln("applies_to"), "applies_to")
        ctx.keys(applies, ("servers",), "applies_to")
        if "servers" in applies:
            out["servers"] = _servers(ctx, applies["servers"], applies.line_of("servers"), "applies_to.servers")
    if "fire" in data:
        fire = ctx.mapping(data["fire"], ln("fire"), "fire")
        ctx.keys(fire, ("all", "any"), "fire")
        if "all" in fire:
            out["fire_all"] = _conditions(ctx, fire["all"], fire.line_of("all"), "fire.all", names)
        if "any" in fire:
            out["fire_any"] = _conditions(ctx, fire["any"], fire.line_of("any"), "fire.any", names)
    if "thresholds" in data:
        out["thresholds"] = _thresholds(ctx, data["thresholds"], ln("thresholds"), names)
    if "raise_if" in data:
        out["raise_if"] = _conditions(ctx, data["raise_if"], ln("raise_if"), "raise_if", names)
    if "share" in data:
        share = ctx.text(data["share"], ln("share"), "share")
        if share not in names:
            raise ctx.fail(ln("share"), f"share refers to unknown evidence '{share}'")
        out["share"] = share
    if "chain" in data:
        chain = _strings(ctx, data["chain"], ln("chain"), "chain")
        for name in chain:
            if name not in names:
                raise ctx.fail(ln("chain"), f"chain refers to unknown evidence '{name}'")
        out["chain"] = chain
    if "min_samples" in data:
        if not isinstance(data["min_samples"], int) or data["min_samples"] < 0:
            raise ctx.fail(ln("min_samples"), "min_samples must be a non-negative integer")
        out["min_samples"] = data["min_samples"]
    if "skip_callers" in data:
        out["skip_callers"] = _patterns(ctx, data["skip_callers"], ln("skip_callers"), "skip_callers")
    if "message_if" in data:
        out["message_if"] = _guarded(ctx, data["message_if"], ln("message_if"), names)
    for key in ("confirm", "refute"):
        if key in data:
            out[key] = _guarded(ctx, data[key], ln(key), names, key)
    if "decided_by" in data:
        out["decided_by"] = ctx.text(data["decided_by"], ln("decided_by"), "decided_by").strip()
    if "unconfirmed_max" in data:
        if data["unconfirmed_max"] not in SEVERITIES:
            raise ctx.fail(ln("unconfirmed_max"), f"unconfirmed_max must be one of {', '.join(SEVERITIES)}")
        out["unconfirmed_max"] = data["unconfirmed_max"]
    if "threads" in data:
        threads = ctx.text(data["threads"], ln("threads"), "threads")
        if threads.split(".")[0] not in names:
            raise ctx.fail(ln("threads"), f"threads refers to unknown evidence '{threads}'")
        out["threads"] = threads
    if "explains" in data:
        out["explains"] = _strings(ctx, data["explains"], ln("explains"), "explains")
    if "fix" in data:
        out["fix"] = _fix(ctx, data["fix"], ln("fix"), names)
    for key in ("next_steps", "references"):
        if key in data:
            out[key] = _strings(ctx, data[key], ln(key), key)
    return out


def _doc(ctx: _Ctx, value: Any, line: int) -> dict[str, str]:
    data = ctx.mapping(value, line, "doc")
    ctx.keys(data, DOC_KEYS, "doc")
    for key in DOC_KEYS:
        if key not in data:
            raise ctx.fail(data.line, f"doc needs '{key}' (Symptom / Why / Fix / Caveats)")
    return {key: ctx.text(data[key], data.line_of(key), f"doc.{key}").strip() for key in DOC_KEYS}

"""The fixed set of matchers: stack and latch shares (findings/stackmatch.py), and fact look-ups."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from .derived import DERIVED_FACTS
from ..model.counters import ratio
from .facts import Facts, dig, number
from .offcpumatch import match_offcpu
from .patterns import PatternSet
from .schema import Matcher
from .stackmatch import STACKS, StackIndex, match_latch, match_stack  # noqa: F401 (STACKS: engine's key)

def _fact(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    num = number(value) if not isinstance(value, (Mapping, list)) else None
    return {"value": num if num is not None and not isinstance(value, str) else value, "number": num}


def _server_fact(facts: Facts, missing: list[str], what: str, value: Any) -> dict[str, Any] | None:
    if facts.server is None:
        missing.append(facts.server_missing)
        return None
    if value is None:
        missing.append(f"{what} not reported by the server")
    return _fact(value)


def _ratio(facts: Facts, pair: tuple[str, str], missing: list[str]) -> dict[str, Any] | None:
    num, den = facts.counter(pair[0]), facts.counter(pair[1])
    value = ratio(num, den)
    if value is None:
        pmu = facts.run.host.hardware_pmu
        why = "no hardware PMU on this host" if pmu is False else "not in counters.json"
        missing.append(f"{pair[0]}/{pair[1]} unavailable ({why})")
        return None
    return {"value": value, pair[0]: num, pair[1]: den}


_WHERE = {"host": "run.json host.", "run": "run.json ", "target": "run.json targets[].",
          "analysis": "analysis.json ", "quality": "analysis.json quality[]."}


def _path(facts: Facts, source: str, path: str, about: str, missing: list[str]) -> dict[str, Any] | None:
    data = {"host": facts.run.host, "run": facts.run, "target": facts.target, "analysis": facts.analysis,
            "quality": facts.quality}[source]
    value = dig(data, path)
    if value is None:
        missing.append(f"{about or path}: not recorded ({_WHERE[source]}{path})")
    return _fact(value)


Compute = Callable[[Matcher, StackIndex, Facts, PatternSet, list[str]], Any]


def compute(matcher: Matcher, index: StackIndex, facts: Facts, skip: PatternSet, missing: list[str]) -> Any:
    """Evaluate one matcher; None means 'not known', and ``missing`` says why."""
    kind, spec = matcher.kind, matcher.spec
    if kind == "stack":
        return match_stack(index, spec, skip)
    if kind == "latch":
        return match_latch(index, spec)
    if kind == "offcpu":
        return match_offcpu(index, spec, skip, missing)
    if kind == "counter_ratio":
        return _ratio(facts, spec, missing)
    if kind == "counter":
        value = facts.counter(spec)
        if value is None:
            missing.append(f"counter {spec} not in counters.json")
        return _fact(value)
    if kind == "variable":
        return _server_fact(facts, missing, f"variable {spec}", facts.variable(spec))
    if kind == "status":
        return _server_fact(facts, missing, f"status {spec}", facts.status(spec))
    if kind == "processlist_state":
        plist = facts.server.processlist if facts.server else None
        if facts.server is not None and plist is None:
            missing.append("processlist not captured")
            return None
        return _server_fact(facts, missing, "processlist", plist.states.get(spec, 0) if plist else None)
    if kind == "mysql":
        return _server_fact(facts, missing, f"mysql.json {spec}", dig(facts.server, spec))
    if kind in _WHERE:
        return _path(facts, kind, spec, matcher.about, missing)
    if kind == "derived":
        return DERIVED_FACTS[spec](facts, index, missing)
    raise AssertionError(f"unknown matcher kind {kind}")  # the schema rejects these

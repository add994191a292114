"""The fixed set of matchers: stack shares with caller context, and fact look-ups."""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Mapping

from ..model.profile import Profile
from .derived import DERIVED_FACTS
from .facts import Facts, dig, number
from .latches import ALTERNATIVES, Attributor, Wait
from .patterns import PatternSet
from .schema import Matcher

MAX_CALLERS = 3
TOP_CHAINS = 3


class StackIndex:
    """One process's stacks (root label dropped) with cached pattern matches per frame, and its latch waits."""

    def __init__(self, profile: Profile, process: str, attributor: Attributor | None = None) -> None:
        self.process = process
        self.stacks = [(s[1:], c) for s, c in profile.stacks.items() if s and s[0] == process and len(s) > 1]
        self.total = sum(c for s, c in profile.stacks.items() if s and s[0] == process)
        self._frames = {f for s, _ in self.stacks for f in s}
        self._cache: dict[PatternSet, frozenset[str]] = {}
        self.attributor = attributor
        self._waits: list[tuple[tuple[str, ...], int, Wait, str, str]] | None = None

    def waits(self) -> list[tuple[tuple[str, ...], int, Wait, str, str]]:
        """(frames, count, wait, latch id, mode) for every stack in a spin or wait path (computed once)."""
        if self._waits is None:
            self._waits = []
            for frames, count in self.stacks if self.attributor else ():
                found = self.attributor.attribute(frames)
                if found is not None:
                    self._waits.append((frames, count, *found))
        return self._waits

    def matching(self, patterns: PatternSet) -> frozenset[str]:
        hit = self._cache.get(patterns)
        if hit is None:
            hit = frozenset(f for f in self._frames if patterns.matches(f))
            self._cache[patterns] = hit
        return hit


def _callers(frames: tuple[str, ...], index: int, skip: frozenset[str]) -> tuple[str, ...]:
    """Nearest non-lock parents of frames[index], nearest first, consecutive repeats collapsed."""
    out: list[str] = []
    for frame in reversed(frames[:index]):
        if frame in skip or (out and out[-1] == frame) or frame == frames[index]:
            continue
        out.append(frame)
        if len(out) == MAX_CALLERS:
            break
    return tuple(out)


def chain_text(hot: str, share: float, callers: tuple[str, ...]) -> str:
    return " ← ".join((f"{hot} {share * 100:.1f}%",) + callers)


def match_stack(index: StackIndex, spec: Mapping[str, PatternSet], skip: PatternSet) -> dict[str, Any]:
    """Share of samples whose stack matches; the hot frame and the callers that explain it."""
    self_mode = "self" in spec
    primary = index.matching(spec["self" if self_mode else "inclusive"])
    sets = {k: index.matching(v) for k, v in spec.items() if k not in ("self", "inclusive")}
    skipped = index.matching(skip)
    count, hot, chains = 0, Counter(), Counter()
    for frames, n in index.stacks:
        if self_mode:
            at = len(frames) - 1 if frames[-1] in primary else -1
        else:
            at = next((i for i in range(len(frames) - 1, -1, -1) if frames[i] in primary), -1)
        if at < 0 or not _context_ok(frames, at, sets):
            continue
        count += n
        hot[frames[at]] += n
        chains[(frames[at], _callers(frames, at, skipped))] += n
    total = index.total or 1
    if not count:
        return {"value": 0.0, "share": 0.0, "count": 0, "hot": None, "chain": "", "callers": [], "chains": []}
    (top_hot, top_callers), _ = max(chains.items(), key=lambda kv: (kv[1], kv[0]))
    hot_share = hot[top_hot] / total
    ranked = sorted(chains.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_CHAINS]
    return {
        "value": count / total, "share": count / total, "count": count,
        "hot": top_hot, "hot_share": hot_share, "callers": list(top_callers),
        "chain": chain_text(top_hot, hot_share, top_callers),
        "chains": [{"frames": [h, *c], "share": round(n / total, 6), "text": chain_text(h, n / total, c)}
                   for (h, c), n in ranked],
    }


def match_latch(index: StackIndex, spec: Mapping[str, Any]) -> dict[str, Any]:
    """Share of samples waiting for one of the latches (optionally inside / not inside some callers)."""
    wanted = spec["latches"]
    inside = index.matching(spec["inside"]) if "inside" in spec else None
    not_inside = index.matching(spec["not_inside"]) if "not_inside" in spec else None
    count, chains, modes, kinds = 0, Counter(), Counter(), Counter()
    for frames, n, wait, latch, mode in index.waits():
        if not wanted & set(latch.split(ALTERNATIVES)) or ("modes" in spec and mode not in spec["modes"]):
            continue
        if inside is not None and not any(f in inside for f in frames):
            continue
        if not_inside is not None and any(f in not_inside for f in frames):
            continue
        count += n
        chains[((wait.acquirer,) if wait.acquirer else ()) + wait.callers] += n
        kinds[wait.kind] += n
        if mode:
            modes[mode] += n
    total = index.total or 1
    if not count:
        return {"value": 0.0, "share": 0.0, "count": 0, "hot": None, "chain": "", "callers": [], "chains": []}
    ranked = sorted(chains.items(), key=lambda kv: (-kv[1], kv[0]))
    top, top_n = ranked[0]
    hot = top[0] if top else "(unknown caller)"
    return {
        "value": count / total, "share": count / total, "count": count, "hot": hot, "hot_share": top_n / total,
        "callers": list(top[1:]), "chain": chain_text(hot, top_n / total, top[1:]),
        "chains": [{"frames": list(c), "share": round(n / total, 6), "text": chain_text(c[0] if c else "?", n / total, c[1:])}
                   for c, n in ranked[:TOP_CHAINS]],
        "modes": dict(modes), "mode": modes.most_common(1)[0][0] if modes else "", "kinds": dict(kinds),
        "modes_text": ", ".join(f"{m} {n / count:.0%}" for m, n in modes.most_common()) or "not known",
    }


def _context_ok(frames: tuple[str, ...], at: int, sets: Mapping[str, frozenset[str]]) -> bool:
    above = frames[:at]
    if "inside" in sets and not any(f in sets["inside"] for f in above):
        return False
    if "not_inside" in sets and any(f in sets["not_inside"] for f in above):
        return False
    if "leaf" in sets and frames[-1] not in sets["leaf"]:
        return False
    if "leaf_not" in sets and frames[-1] in sets["leaf_not"]:
        return False
    return True


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
    if num is None or den is None or den == 0:
        pmu = facts.run.host.hardware_pmu
        why = "no hardware PMU on this host" if pmu is False else "not in counters.json"
        missing.append(f"{pair[0]}/{pair[1]} unavailable ({why})")
        return None
    return {"value": num / den, pair[0]: num, pair[1]: den}


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

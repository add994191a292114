"""The ``window`` kind: the server's counters over the capture's window (model/wincounters.py), by rate, ratio, growth.

A spec is one of ``rate``, ``delta``, ``ratio``, ``level``, ``growth`` over status counters (status.json's polls
once a second, else mysql.json's two reads; pmuprof's own statements taken out), or ``state`` / ``statement``
over the processlist polls (model/activity.py), or ``transaction: oldest`` (the InnoDB state at the capture's
end: the transaction whose read view holds purge back, else the oldest). ``waited`` reads a counter of milliseconds
waited (``Innodb_row_lock_time``): its rate over 1000 is the threads waiting on average, an absolute weight. A counter is a name, ``A|B`` (the first
the server has: a name that moved between versions), or a list (their sum). Every name is a status variable of
rules/knowledge/server-features.yaml, so a rule reads only counters whose versions are known: on a server
without the counter the value is not known and ``missing`` says so; the rule's other evidence decides.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from collections.abc import Mapping

from ...model.activity import Activity
from ...model.status import Transaction
from ...model.wincounters import WindowCounters
from ..evidence import Summarized, number, pct
from ..knowledge import server_features
from .base import Env, Kind, Matcher, SpecCtx

COUNTER_FORMS = ("rate", "delta", "ratio", "level", "growth", "waited")
POLL_FORMS = ("state", "statement")
FORMS = COUNTER_FORMS + POLL_FORMS + ("transaction",)
NO_WINDOW = "no server counters over the window (mysql.json's status)"


@dataclass(frozen=True, eq=False)
class Counted(Summarized):
    """A counter reading over the window: ``value`` and its words (``Opened_tables 27,800/s``)."""

    value: float
    summary: str
    counters: Mapping[str, float] = field(default_factory=dict)  # each counter's delta (or level) it read
    seconds: float = 0.0
    own: Mapping[str, float] = field(default_factory=dict)  # pmuprof's own part subtracted, when any
    first: float | None = None  # gauges: the first and last level, growth per second, share of rising steps
    last: float | None = None
    per_s: float | None = None
    rising_share: float | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "value": self.value,
            "summary": self.summary,
            "counters": dict(self.counters),
            "seconds": self.seconds,
        }
        if self.own:
            out["own_subtracted"] = {k: int(v) if float(v).is_integer() else v for k, v in self.own.items()}
        for key in ("first", "last", "per_s", "rising_share"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.first is not None and self.last is not None:
            out["growth"] = self.last - self.first
        return out


@dataclass(frozen=True, eq=False)
class Polls(Summarized):
    """The share of the processlist polls with a matching thread, and such threads a poll on average."""

    value: float
    threads: float
    polls: int
    summary: str


@dataclass(frozen=True, eq=False)
class Held(Summarized):
    """A transaction the server listed: who holds it, since when, doing what."""

    value: float  # its age in seconds
    thread: int | None
    trx_id: str
    state: str
    isolation: str
    statement: str
    summary: str


def _names(ctx: SpecCtx, value: Any, line: int, what: str) -> tuple[str, ...]:
    names = ctx.strings(value, line, what)
    table = server_features()
    for name in names:
        for alt in name.split("|"):
            feature = table.get(alt)
            if feature is None or feature.kind != "status":
                raise ctx.fail(
                    line,
                    f"{what}: '{alt}' is not a status variable of rules/knowledge/server-features.yaml",
                    "add it there with the versions that have it (verified in their sources)",
                )
    return names


class Window(Kind[Counted | Polls | Held]):
    name = "window"
    guide = (
        "`window` (the server's counters over the capture: `rate`, `delta`, `ratio: [num, den]`, `level`, "
        "`growth` of status variables, `state` / `statement` share of processlist polls, `transaction: oldest`)"
    )
    about = "{}"

    def validate(self, ctx: SpecCtx, spec: Any, line: int) -> Any:
        data = ctx.mapping(spec, line, "window")
        ctx.keys(data, FORMS, "window")
        if len(data) != 1:
            raise ctx.fail(line, f"window needs exactly one of: {', '.join(FORMS)}")
        form = next(iter(data))
        at = data.line_of(form)
        if form == "ratio":
            pair = data[form]
            if not isinstance(pair, list) or len(pair) != 2:
                raise ctx.fail(at, "window.ratio is [numerator, denominator], each a counter or a list of them")
            return (form, tuple(_names(ctx, part, at, "window.ratio") for part in pair))
        if form == "transaction":
            if data[form] != "oldest":
                raise ctx.fail(at, "window.transaction is 'oldest'")
            return (form, ())
        if form in POLL_FORMS:
            return (form, ctx.strings(data[form], at, f"window.{form}"))
        names = _names(ctx, data[form], at, f"window.{form}")
        if form in ("level", "growth", "waited") and len(names) != 1:
            raise ctx.fail(at, f"window.{form} reads one gauge")
        return (form, names)

    def evaluate(self, matcher: Matcher, env: Env) -> Counted | Polls | Held | None:
        form, names = matcher.spec
        if form in POLL_FORMS:
            return _polls(env.facts.activity, form, names, env)
        window = env.facts.window
        if window is None:
            env.missing.append(f"{self.doc(matcher.spec)}: {env.facts.server_missing or NO_WINDOW}")
            return None
        if form == "transaction":
            return _oldest(window, env)
        return _counted(window, form, names, env)

    def doc(self, spec: Any) -> str:
        form, names = spec
        if form == "ratio":
            return f"ratio of `{_sum_text(names[0])}` to `{_sum_text(names[1])}` over the window"
        if form in POLL_FORMS:
            return f"share of processlist polls with a thread {'in' if form == 'state' else 'running'} " + ", ".join(
                f"`{n}`" for n in names
            )
        if form == "transaction":
            return "the transaction holding the oldest read view, else the oldest (INNODB_TRX at the capture's end)"
        words = {
            "rate": "per second",
            "delta": "growth",
            "level": "level",
            "growth": "growth per second of the gauge",
            "waited": "milliseconds a second / 1000: threads waiting on average",
        }[form]
        return f"`{_sum_text(names)}` {words} over the window"

    def subject(self, spec: Any) -> str:
        form, names = spec
        if form == "ratio":
            return f"{_sum_text(names[0])} / {_sum_text(names[1])}"
        return _sum_text(names) if form in COUNTER_FORMS else ""

    def counters(self, spec: Any) -> tuple[str, ...]:
        """The status variables it reads (each alternative), for docs/rules.md."""
        form, names = spec
        parts = names if form != "ratio" else names[0] + names[1]
        return tuple(alt for n in parts for alt in n.split("|")) if form in COUNTER_FORMS else ()


def _sum_text(names: tuple[str, ...]) -> str:
    return " + ".join(names)


def _pick(window: WindowCounters, name: str, env: Env) -> str | None:
    """The first alternative the window has; None (and why, in ``missing``) when it has none."""
    alts = name.split("|")
    found = next((a for a in alts if window.has(a)), None)
    if found is None:
        facts, table = env.facts, server_features()
        absent = [
            a for a in alts if a in table and facts.family and not table[a].exists.hold(facts.family, facts.version)
        ]
        server = f"{facts.family} {'.'.join(map(str, facts.version))}" if facts.family else "this server"
        why = f"not on {server}" if len(absent) == len(alts) else "not in the server's status"
        env.missing.append(f"{' / '.join(alts)}: {why}")
    return found


def _rate_text(value: float, form: str) -> str:
    return f"{number(round(value, 1) if abs(value) < 100 else round(value))}{'/s' if form == 'rate' else ''}"


def _change(window: WindowCounters, name: str) -> float:
    """How much a counter rose over the window (pmuprof's own part taken out), or a level's last value less its
    first (the history list's growth)."""
    delta = window.delta(name)
    return delta if delta is not None else (window.growth(name) or 0.0)


def _counted(window: WindowCounters, form: str, names: tuple[Any, ...], env: Env) -> Counted | None:
    span = round(window.span, 3)
    if form == "ratio":
        top, bottom = _picked(window, names[0], env), _picked(window, names[1], env)
        if top is None or bottom is None:
            return None
        num = sum(_change(window, p) for p in top)
        den = sum(_change(window, p) for p in bottom)
        if not den:
            env.missing.append(f"{' + '.join(bottom)} did not move in the window: no ratio")
            return None
        used = {p: _change(window, p) for side in (top, bottom) for p in side}
        text = f"{pct(num / den)} ({' + '.join(top)} {number(round(num))} of {' + '.join(bottom)} {number(round(den))})"
        return Counted(num / den, text, used, span, _own(window, used))
    picked = _picked(window, names, env)
    if picked is None:
        return None
    if form in ("level", "growth"):
        return _gauge(window, form, picked[0])
    levels = [p for p in picked if window.delta(p) is None]
    if levels:
        env.missing.append(f"{', '.join(levels)}: a level, not a count (read its level or growth)")
        return None
    deltas = {p: window.delta(p) or 0.0 for p in picked}
    if form in ("rate", "waited"):
        value = sum(window.rate(p) or 0.0 for p in picked) if window.span > 0 else 0.0
    else:
        value = sum(deltas.values())
    text = f"{' + '.join(picked)} {_rate_text(value, form)}"
    if form == "waited":
        text = f"{picked[0]} {number(round(value))} ms/s = {value / 1000:.1f} threads waiting on average"
        value /= 1000
    return Counted(value, text, deltas, span, _own(window, deltas))


def _picked(window: WindowCounters, names: tuple[str, ...], env: Env) -> tuple[str, ...] | None:
    """Each name's first alternative the window has; None when one has none (``missing`` says which)."""
    picked = [_pick(window, n, env) for n in names]
    return tuple(p for p in picked if p is not None) if all(p is not None for p in picked) else None


def _gauge(window: WindowCounters, form: str, name: str) -> Counted:
    levels = [v for v in window.values(name) if v is not None]
    first, last = levels[0], levels[-1]
    growth = last - first
    per_s = growth / window.span if window.span > 0 else None
    value = last if form == "level" else (per_s if per_s is not None else growth)
    if form == "level":
        text = f"{name} {number(value)}" + (f" (from {number(first)})" if first != last else "")
    else:
        text = f"{name} {number(first)} → {number(last)} ({'+' if growth >= 0 else ''}{number(round(growth))}"
        text += f" in {window.span:.1f} s, {number(round(per_s))}/s)" if per_s is not None else ")"
    span = round(window.span, 3)
    return Counted(value, text, {name: last}, span, {}, first, last, per_s, window.rising(name))


def _own(window: WindowCounters, used: Mapping[str, Any]) -> dict[str, float]:
    return {k: own for k in used if (own := window.own(k))}


def _polls(activity: Activity | None, form: str, names: tuple[str, ...], env: Env) -> Polls | None:
    if activity is None or not activity.polls:
        env.missing.append("no processlist polls")
        return None
    if form == "statement" and not activity.statements:
        env.missing.append(f"statements not polled ({activity.source})")
        return None
    share, threads = activity.share(names, "states" if form == "state" else "statements")
    what = "in " + " / ".join(f"'{n}'" for n in names) if form == "state" else "running " + " / ".join(names)
    text = f"a thread {what} in {pct(share)} of {activity.polls} polls ({threads:.1f} such threads a poll)"
    return Polls(share, threads, activity.polls, text)


def _oldest(window: WindowCounters, env: Env) -> Held | None:
    """The transaction whose read view holds purge back furthest at the capture's end (else its start), else the
    oldest one (model/status.py InnodbState)."""
    state = window.end or window.start
    trx: Transaction | None = None
    if state is not None:
        trx = state.oldest_view() or state.oldest_transaction()
    if trx is None or trx.age_s is None:
        if window.source != "status.json":
            why = "the run has no status.json, where the capture reads INNODB_TRX"
        elif state is None or state.missing:
            why = "status.json's InnoDB state was not read (its notes say why)"
        else:
            why = "no transaction was open at the capture's end"
        env.missing.append(f"the oldest transaction is not known: {why}")
        return None
    if trx.statement:
        doing = f"running {trx.statement}"
    elif trx.command == "Sleep" and trx.idle_s is not None:
        doing = f"idle in its transaction for {number(trx.idle_s)} s"
    else:
        doing = "idle in its transaction"
    view = ", its read view the oldest" if trx.read_view else ""
    text = (
        f"connection {trx.thread_id}, transaction {trx.trx_id or '?'} open {number(trx.age_s)} s "
        f"({trx.isolation or '?'}{view}), {doing}"
    )
    return Held(float(trx.age_s), trx.thread_id, trx.trx_id, trx.state, trx.isolation, trx.statement, text)

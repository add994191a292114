"""The server kinds: ``variable``, ``status``, ``processlist_state`` and ``mysql`` (paths in mysql.json)."""

from __future__ import annotations

from typing import Any

from ..facts import Facts, dig
from ..evidence import Fact, number
from .base import Declared, Env, Kind, Matcher, fact


def server_fact(facts: Facts, missing: list[str], what: str, value: Any) -> Fact | None:
    """A fact the server reported; without mysql.json, or when the server left it out, ``missing`` says so."""
    if facts.server is None:
        missing.append(facts.server_missing)
        return None
    if value is None:
        missing.append(f"{what} not reported by the server")
    return fact(value)


class Variable(Kind[Fact]):
    name = "variable"
    guide = "`variable`"
    about = "server variable {}"

    def evaluate(self, matcher: Matcher, env: Env) -> Fact | None:
        spec = matcher.spec
        return server_fact(env.facts, env.missing, f"variable {spec}", env.facts.variable(spec))


class Status(Kind[Fact]):
    name = "status"
    guide = "`status`"
    about = "server status {}"

    def evaluate(self, matcher: Matcher, env: Env) -> Fact | None:
        spec = matcher.spec
        return server_fact(env.facts, env.missing, f"status {spec}", env.facts.status(spec))


class ProcesslistState(Kind[Fact]):
    name = "processlist_state"
    guide = "`processlist_state`"
    about = "threads in processlist state '{}'"

    def evaluate(self, matcher: Matcher, env: Env) -> Fact | None:
        facts = env.facts
        plist = facts.server.processlist if facts.server else None
        if facts.server is not None and plist is None:
            env.missing.append("processlist not captured")
            return None
        return server_fact(facts, env.missing, "processlist", plist.states.get(matcher.spec, 0) if plist else None)

    def words(self, item: Declared, value: Fact) -> str:
        return f"{number(value.value)} threads"


class Mysql(Kind[Fact]):
    name = "mysql"
    guide = "`mysql` (path in mysql.json)"
    about = "mysql.json {}"

    def evaluate(self, matcher: Matcher, env: Env) -> Fact | None:
        spec = matcher.spec
        return server_fact(env.facts, env.missing, f"mysql.json {spec}", dig(env.facts.server, spec))

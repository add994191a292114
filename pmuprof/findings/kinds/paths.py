"""The path kinds: a value at a path in run.json (``host``, ``run``, ``target``) or analysis.json (``analysis``, ``quality``)."""

from __future__ import annotations

from typing import Any

from ..facts import Facts, dig
from ..evidence import Fact
from .base import Env, Kind, Matcher, fact


class Path(Kind[Fact]):
    """A value at a path in one recorded document; ``where`` says where, for ``missing``."""

    where = ""

    def document(self, facts: Facts) -> Any:
        raise NotImplementedError

    def evaluate(self, matcher: Matcher, env: Env) -> Fact | None:
        value = dig(self.document(env.facts), matcher.spec)
        if value is None:
            env.missing.append(f"{matcher.about or matcher.spec}: not recorded ({self.where}{matcher.spec})")
        return fact(value)


class Host(Path):
    name, where, about = "host", "run.json host.", "run.json host.{}"
    guide = "`host` / `run` / `target` (paths in run.json)"

    def document(self, facts: Facts) -> Any:
        return facts.run.host


class Run(Path):
    name, where, about = "run", "run.json ", "run.json {}"

    def document(self, facts: Facts) -> Any:
        return facts.run


class Target(Path):
    name, where, about = "target", "run.json targets[].", "run.json target {}"

    def document(self, facts: Facts) -> Any:
        return facts.target


class Analysis(Path):
    name, where, about = "analysis", "analysis.json ", "analysis.json {}"
    guide = "`analysis` (path in analysis.json, e.g. `skid.pause_share`)"

    def document(self, facts: Facts) -> Any:
        return facts.analysis


class Quality(Path):
    name, where, about = "quality", "analysis.json quality[].", "stack quality: {}"
    guide = "`quality` (this process's stack quality: `unnamed_share`, `truncated_share`, `unnamed_functions`, ...)"

    def document(self, facts: Facts) -> Any:
        return facts.quality

"""The ``derived`` kind: a fact computed from several (findings/derived.py DERIVED_FACTS)."""

from __future__ import annotations

from typing import Any

from ..derived import DERIVED_FACTS
from ..evidence import Evidence
from .base import Env, Kind, Matcher, SpecCtx


class Derived(Kind[Evidence]):
    name = "derived"
    guide = "`derived` (" + ", ".join(f"`{name}`" for name in DERIVED_FACTS) + ")"
    about = "{}"

    def validate(self, ctx: SpecCtx, spec: Any, line: int) -> Any:
        if not isinstance(spec, str) or spec not in DERIVED_FACTS:
            raise ctx.fail(line, f"unknown derived fact '{spec}'", f"one of: {', '.join(DERIVED_FACTS)}")
        return spec

    def evaluate(self, matcher: Matcher, env: Env) -> Evidence | None:
        return DERIVED_FACTS[matcher.spec](env.facts, env.index, env.missing)

    def offcpu(self, spec: Any) -> bool:
        return str(spec).startswith("offcpu")

"""The ``derived`` kind: a fact computed from several (findings/derived.py DERIVED_FACTS)."""

from __future__ import annotations

from typing import Any
from collections.abc import Mapping

from ..derived import DERIVED_FACTS
from .base import Env, Kind, SpecCtx, is_share, number, pct, scalar_words, stack_words


class Derived(Kind):
    name = "derived"
    guide = "`derived` (" + ", ".join(f"`{name}`" for name in DERIVED_FACTS) + ")"
    about = "{}"

    def validate(self, ctx: SpecCtx, spec: Any, line: int) -> Any:
        if not isinstance(spec, str) or spec not in DERIVED_FACTS:
            raise ctx.fail(line, f"unknown derived fact '{spec}'", f"one of: {', '.join(DERIVED_FACTS)}")
        return spec

    def evaluate(self, matcher: Any, env: Env) -> Any:
        return DERIVED_FACTS[matcher.spec](env.facts, env.index, env.missing)

    def offcpu(self, spec: Any) -> bool:
        return str(spec).startswith("offcpu")

    def words(self, item: Any, value: Mapping[str, Any]) -> str:
        if {"count", "share"} <= set(value):
            return stack_words(value)
        if item.what == "numa_placement":
            remote = value.get("remote_memory_share")
            nodes = ", ".join(str(n) for n in value.get("cpu_nodes") or []) or "?"
            return f"runs on node(s) {nodes} of {value.get('host_nodes') or '?'}; remote memory " + (
                pct(remote) if isinstance(remote, (int, float)) else "not known"
            )
        if item.what == "samples":
            return f"{number(value.get('value'))} samples"
        return str(value.get("summary") or scalar_words(item, value.get("value"), is_share(item, self)))

"""The ``stack`` kind: the share of samples whose stack matches frame patterns (findings/stackmatch.py)."""

from __future__ import annotations

from typing import Any, Mapping

from ..stackmatch import match_stack
from .base import Env, Kind, SpecCtx, stack_words

STACK_KEYS = ("self", "inclusive", "inside", "not_inside", "leaf", "leaf_not")


def stack_spec(ctx: SpecCtx, spec: Any, line: int, what: str, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    """self / inclusive frame patterns with inside, not_inside, leaf, leaf_not (``extra`` keys left as given)."""
    spec = ctx.mapping(spec, line, f"{what} matcher")
    ctx.keys(spec, STACK_KEYS + extra, f"{what} matcher")
    if ("self" in spec) == ("inclusive" in spec):
        either = "'self', 'inclusive' or 'latches'" if what == "offcpu" else "'self' or 'inclusive'"
        raise ctx.fail(line, f"{what} matcher needs exactly one of {either}")
    return {k: ctx.patterns(v, spec.line_of(k), f"{what}.{k}") for k, v in spec.items() if k not in extra}


def stack_doc(spec: Mapping[str, Any]) -> str:
    return "; ".join(f"{key.replace('_', ' ')}: " + ", ".join(f"`{p}`" for p in pats.patterns)
                     for key, pats in spec.items())


class Stack(Kind):
    name = "stack"
    guide = "`stack` (`self` or `inclusive` frame patterns, with `inside`, `not_inside`, `leaf`, `leaf_not`)"
    stacks = True
    share = True

    def validate(self, ctx: SpecCtx, spec: Any, line: int) -> Any:
        return stack_spec(ctx, spec, line, "stack")

    def evaluate(self, matcher: Any, env: Env) -> Any:
        return match_stack(env.index, matcher.spec, env.skip)

    def doc(self, spec: Any) -> str:
        return stack_doc(spec)

    def subject(self, spec: Any) -> str:
        return ""

    def words(self, item: Any, value: Mapping[str, Any]) -> str:
        return stack_words(value)

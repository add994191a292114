"""The ``stack`` kind: the share of samples whose stack matches frame patterns (findings/stackmatch.py)."""

from __future__ import annotations

from dataclasses import fields
from typing import Any
from collections.abc import Mapping


from ..stackmatch import match_stack
from ..stackshare import StackPart, StackShare
from .base import Env, Kind, Matcher, SpecCtx

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
    return "; ".join(
        f"{key.replace('_', ' ')}: " + ", ".join(f"`{p}`" for p in pats.patterns) for key, pats in spec.items()
    )


class Stack(Kind[StackShare]):
    name = "stack"
    guide = (
        "`stack` (`self` or `inclusive` frame patterns, with `inside`, `not_inside`, `leaf`, `leaf_not`; "
        "`of`: frames whose samples `.of_share` divides by)"
    )
    stacks = True
    share = True

    def validate(self, ctx: SpecCtx, spec: Any, line: int) -> Any:
        out = stack_spec(ctx, spec, line, "stack", ("of",))
        if "of" in spec:  # a part of other samples: of_share = matched / samples holding an `of` frame
            out["of"] = ctx.patterns(spec["of"], spec.line_of("of"), "stack.of")
            if not out["of"].patterns:
                raise ctx.fail(spec.line_of("of"), "stack.of needs at least one frame pattern")
        return out

    def evaluate(self, matcher: Matcher, env: Env) -> StackShare:
        found = match_stack(env.index, matcher.spec, env.skip)  # it reads no `of`
        if "of" not in matcher.spec:
            return found
        index = env.index
        whole = index.weight(index.st.rows_with(index.lut(matcher.spec["of"])))
        return StackPart(
            **{f.name: getattr(found, f.name) for f in fields(found)}, of_share=found.count / whole if whole else None
        )

    def doc(self, spec: Any) -> str:
        return stack_doc(spec)

    def subject(self, spec: Any) -> str:
        return ""

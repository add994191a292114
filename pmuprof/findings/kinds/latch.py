"""The ``latch`` kind: the share of samples waiting for given latches (findings/latches.py attribution)."""

from __future__ import annotations

from typing import Any
from collections.abc import Mapping

from ..knowledge import latch_table
from ..stackmatch import match_latch
from ..yamlload import LDict
from ..stackshare import StackShare
from .base import Env, Kind, Matcher, SpecCtx

LATCH_KEYS = ("latches", "inside", "not_inside", "modes", "ambiguous")


def latch_spec(ctx: SpecCtx, spec: Any, line: int) -> dict[str, Any]:
    """latch: [ids] or {latches: [ids], inside: [patterns], not_inside: [patterns], modes: [S, X, ...]};
    {ambiguous: true, latches?: [ids]}: samples the stack attributes to "a or b" that no one rule covers
    (optionally those naming one of the latches)."""
    if not isinstance(spec, LDict):
        spec = LDict.of({"latches": spec}, line)
    ctx.keys(spec, LATCH_KEYS, "latch matcher")
    ambiguous = spec.get("ambiguous", False)
    if not isinstance(ambiguous, bool):
        raise ctx.fail(spec.line_of("ambiguous"), "latch.ambiguous must be true or false")
    if "latches" not in spec and not ambiguous:
        raise ctx.fail(
            line,
            "latch matcher needs 'latches' (latch ids of rules/knowledge/latches.yaml)",
            "or 'ambiguous: true' for samples the stack cannot attribute to one latch",
        )
    ids = (
        frozenset(ctx.strings(spec["latches"], spec.line_of("latches"), "latches"))
        if "latches" in spec
        else frozenset()
    )
    unknown = sorted(ids - {lat.id for lat in latch_table().latches})
    if unknown:
        raise ctx.fail(
            spec.line_of("latches"),
            f"unknown latch id(s) {', '.join(unknown)}",
            "use the ids of rules/knowledge/latches.yaml",
        )
    out: dict[str, Any] = {"latches": ids}
    if ambiguous:
        out["ambiguous"] = True
    for key in ("inside", "not_inside"):
        if key in spec:
            out[key] = ctx.patterns(spec[key], spec.line_of(key), f"latch.{key}")
    if "modes" in spec:
        out["modes"] = frozenset(ctx.strings(spec["modes"], spec.line_of("modes"), "latch.modes"))
    return out


def latches_doc(spec: Mapping[str, Any]) -> str:
    if spec.get("ambiguous"):
        among = " or ".join(f"`{lat}`" for lat in sorted(spec["latches"]))
        return "waits the stack attributes to one of several latches that no one rule covers" + (
            f", one of them {among}" if among else ""
        )
    return "waits for latch " + " or ".join(f"`{lat}`" for lat in sorted(spec["latches"]))


class Latch(Kind[StackShare]):
    name = "latch"
    guide = (
        "`latch` (ids of rules/knowledge/latches.yaml, with `inside`, `not_inside`, `modes`; a wait the stack "
        'attributes to "A or B" counts only where every alternative is listed; `ambiguous: true`: the waits '
        "whose alternatives no one rule covers, with `.names`, `.title`, `.split`, `.rules`, `.key`, `.ps_names`)"
    )
    stacks = True
    share = True

    def validate(self, ctx: SpecCtx, spec: Any, line: int) -> Any:
        return latch_spec(ctx, spec, line)

    def evaluate(self, matcher: Matcher, env: Env) -> StackShare:
        return match_latch(env.index, matcher.spec)

    def doc(self, spec: Any) -> str:
        what = latches_doc(spec)
        for key in ("inside", "not_inside"):
            if key in spec:
                what += f"; {key.replace('_', ' ')}: " + ", ".join(f"`{p}`" for p in spec[key].patterns)
        if "modes" in spec:
            what += "; modes " + ", ".join(sorted(spec["modes"]))
        return what

    def subject(self, spec: Any) -> str:
        return ""

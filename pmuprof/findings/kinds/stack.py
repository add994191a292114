"""The ``stack`` kind: the share of samples whose stack matches frame patterns (findings/stackmatch.py)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any
from collections.abc import Mapping

import numpy as np

from ..stackmatch import STACKS, match_stack
from ..evidence import Evidence
from .base import Env, Kind, SpecCtx, stack_words

STACK_KEYS = ("self", "inclusive", "inside", "not_inside", "leaf", "leaf_not")
# what a latch match adds (findings/stackmatch.py match_latch); the last eight for ambiguous attribution only
LATCH_FIELDS = (
    "modes",
    "mode",
    "kinds",
    "modes_text",
    "alternatives",
    "candidates",
    "names",
    "title",
    "key",
    "split",
    "rules",
    "ps_names",
)


@dataclass(frozen=True, eq=False)
class StackShare(Evidence):
    """Samples whose stack matched: their share, the hot frame and its callers, the top chains.

    ``rows`` (rows of the process's Stacks) is for grouping and never written. A latch match adds
    the wait modes and kinds (``latch``); the other fields are those of findings/stackmatch.py.
    """

    value: float
    share: float
    count: int
    rows: np.ndarray | None
    hot: str | None
    hot_share: float | None  # None when nothing matched
    callers: tuple[str, ...]
    chain: str
    chains: tuple[Mapping[str, Any], ...]  # {frames, share, text}, most samples first
    latch: Mapping[str, Any] | None = None  # LATCH_FIELDS of a latch match

    @classmethod
    def of(cls, found: Mapping[str, Any]) -> StackShare:
        """From findings/stackmatch.py's match_stack / match_latch result."""
        latch = {k: found[k] for k in LATCH_FIELDS if k in found}
        return cls(
            found["value"],
            found["share"],
            found["count"],
            found.get(STACKS),
            found["hot"],
            found.get("hot_share"),
            tuple(found["callers"]),
            found["chain"],
            tuple(found["chains"]),
            latch or None,
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value, "share": self.share, "count": self.count, "hot": self.hot}
        if self.hot_share is not None:
            out["hot_share"] = self.hot_share
        out.update(callers=list(self.callers), chain=self.chain, chains=list(self.chains), **(self.latch or {}))
        return out


@dataclass(frozen=True, eq=False)
class StackPart(StackShare):
    """A stack share that is also a part of other samples: the matched ones over those holding an ``of`` frame."""

    of_share: float | None = None  # None when no sample holds an ``of`` frame

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "of_share": self.of_share}


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


class Stack(Kind):
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

    def evaluate(self, matcher: Any, env: Env) -> Any:
        found = StackShare.of(match_stack(env.index, matcher.spec, env.skip))  # it reads no `of`
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

    def words(self, item: Any, value: Mapping[str, Any]) -> str:
        return stack_words(value)

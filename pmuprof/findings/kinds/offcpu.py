"""The ``offcpu`` kind: off-CPU time blocked in matching stacks or latch waits (findings/offcpumatch.py)."""

from __future__ import annotations

from typing import Any

from ..offcpumatch import match_offcpu
from ..stackshare import OffCpuTime
from .base import Env, Kind, Matcher, SpecCtx
from .latch import latch_spec, latches_doc
from .stack import stack_spec


# the off-CPU state leaf (model/labels.py); W: woken, waiting for a CPU (the part of a sleep after its wake-up)
OFFCPU_STATES = ("R", "S", "D", "T", "?", "W")


class OffCpu(Kind[OffCpuTime]):
    name = "offcpu"
    guide = (
        "`offcpu` (off-CPU time of a `--off-cpu` capture: a stack matcher plus `states: [R, S, D]`, or "
        "`latches`, which count blocked time only (not R, preempted, nor W, woken and waiting for a CPU); its value is the threads blocked there on average, with `.us`, `.seconds`, `.share` of "
        "the off-CPU time and `.threads` seen in the start/end snapshots; off-CPU metrics have no "
        "`min_samples`)"
    )
    stacks = True

    def validate(self, ctx: SpecCtx, spec: Any, line: int) -> Any:
        """A stack matcher with optional ``states`` [R, S, D], or a latch matcher over the off-CPU stacks."""
        spec = ctx.mapping(spec, line, "offcpu matcher")
        if "latches" in spec:
            return latch_spec(ctx, spec, line)
        out: dict[str, Any] = stack_spec(ctx, spec, line, "offcpu", ("states",))
        if "states" in spec:
            states = frozenset(ctx.strings(spec["states"], spec.line_of("states"), "offcpu.states"))
            if not states <= set(OFFCPU_STATES):
                raise ctx.fail(spec.line_of("states"), f"offcpu.states are of {', '.join(OFFCPU_STATES)}")
            out["states"] = states
        return out

    def evaluate(self, matcher: Matcher, env: Env) -> OffCpuTime | None:
        return match_offcpu(env.index, matcher.spec, env.skip, env.missing)

    def doc(self, spec: Any) -> str:
        if "latches" in spec:
            return "off-CPU time, " + latches_doc(spec)
        return "off-CPU time, " + "; ".join(
            f"{key.replace('_', ' ')}: "
            + (", ".join(sorted(pats)) if key == "states" else ", ".join(f"`{p}`" for p in pats.patterns))
            for key, pats in spec.items()
        )

    def subject(self, spec: Any) -> str:
        return ""

    def offcpu(self, spec: Any) -> bool:
        return True

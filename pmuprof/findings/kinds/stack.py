"""The ``stack`` kind: the share of samples whose stack matches frame patterns (findings/stackmatch.py)."""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any
from collections.abc import Mapping

import numpy as np

from ...model.profile import process_rows
from ..stackmatch import match_stack
from ..stackshare import StackPart, StackShare
from ..patterns import PatternSet
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


def after_pause(found: StackShare, self_frames: PatternSet, env: Env) -> StackShare:
    """The samples of matched unnamed functions that sit at the instruction after a PAUSE (a binary without
    symbols): a function that merely contains a PAUSE is no spin loop. Skid puts a PAUSE's samples on the next
    instruction, and the skid correction moved them onto the PAUSE and counted them as 'pause'; a function it did
    not correct counts nothing, and ``missing`` says so. The chain stays the matched stacks'."""
    if not found.count:
        return found
    analysis = env.facts.analysis
    hot = [u.label for u in analysis.unnamed if u.contains_pause and u.self > 0 and self_frames.matches(u.label)]
    pause_labels = {u.label for u in analysis.unnamed if u.contains_pause}
    corrected = {_unnamed_key(f.symbol, pause_labels): f for f in analysis.skid_functions if not f.error}
    spin = {k: f for k, f in corrected.items() if self_frames.matches(k)}
    uncorrected = [label for label in hot if label not in spin] if hot else ([] if spin else ["?"])
    count = sum(int(f.corrected_by_kind.get("pause", 0)) for f in spin.values())
    if uncorrected:
        env.missing.append(
            f"{len(uncorrected)} unnamed PAUSE function(s) not skid-corrected: none of their samples count as spin"
            if hot
            else "no skid correction of the unnamed PAUSE functions: none of their samples count as spin"
        )
    count = min(count, found.count)
    share = count / env.index.total if env.index.total else 0.0
    return replace(found, value=share, share=share, count=count)


def without_own(found: StackShare, env: Env) -> StackShare:
    """The matched samples less those taken by the server threads of pmuprof's own connections (status.json's
    ``own[].thread``, mysql.json's ``processlist.own_thread``): its status reads once a second run the very code
    a monitoring agent's do. With a thread pool (a connection not on one thread) or a run without thread ids
    they cannot be told apart: ``missing`` says so and they stay counted."""
    window = env.facts.window
    if not found.count or window is None or not window.own_traffic:
        return found  # pmuprof sent nothing in the window it measured (mysql.json only: two reads)
    threads = sorted({o.thread for o in window.own_traffic if o.thread is not None} | _facts_thread(env))
    profile = env.index.profile
    samples = profile.samples if profile is not None else None
    if not threads or samples is None or not samples.has_tids:
        why = "the run does not say which server threads served them" if not threads else "no thread ids"
        env.missing.append(f"pmuprof's own connections' samples not told apart ({why}): counted here")
        return found
    whole = process_rows(profile.stacks, env.index.process, found.rows)  # type: ignore[union-attr]
    mine = np.isin(samples.rows, whole) & np.isin(samples.tids, threads)
    own = min(int(samples.counts[mine].sum()), found.count)
    if not own:
        return found
    count = found.count - own
    share = count / env.index.total if env.index.total else 0.0
    return replace(found, value=share, share=share, count=count, own=own)


def _facts_thread(env: Env) -> set[int]:
    plist = env.facts.server.processlist if env.facts.server is not None else None
    return {plist.own_thread} if plist is not None and plist.own_thread is not None else set()


def _unnamed_key(symbol: str, pause_labels: set[str]) -> str:
    """A skid-corrected function under its stack label: analysis.json names an unnamed function that contains a
    PAUSE '[dso+0xSTART]', its stack label is '[dso+0xSTART pause]' (0.1's skid.json used the label)."""
    marked = symbol[:-1] + " pause]" if symbol.endswith("]") else symbol
    return marked if marked in pause_labels else symbol


class Stack(Kind[StackShare]):
    name = "stack"
    guide = (
        "`stack` (`self` or `inclusive` frame patterns, with `inside`, `not_inside`, `leaf`, `leaf_not`; "
        "`of`: frames whose samples `.of_share` divides by; `after_pause: true`: only samples at the instruction "
        "after a PAUSE, for unnamed code; `without_own: true`: pmuprof's own connections' samples left out)"
    )
    stacks = True
    share = True

    def validate(self, ctx: SpecCtx, spec: Any, line: int) -> Any:
        out = stack_spec(ctx, spec, line, "stack", ("of", "after_pause", "without_own"))
        if "of" in spec:  # a part of other samples: of_share = matched / samples holding an `of` frame
            out["of"] = ctx.patterns(spec["of"], spec.line_of("of"), "stack.of")
            if not out["of"].patterns:
                raise ctx.fail(spec.line_of("of"), "stack.of needs at least one frame pattern")
        if "after_pause" in spec:
            if spec["after_pause"] is not True or "self" not in spec or "of" in spec:
                raise ctx.fail(spec.line_of("after_pause"), "after_pause: true goes with self patterns (and no 'of')")
            out["after_pause"] = True
        if "without_own" in spec:
            if spec["without_own"] is not True or "of" in spec:
                raise ctx.fail(spec.line_of("without_own"), "without_own: true (and no 'of')")
            out["without_own"] = True
        return out

    def evaluate(self, matcher: Matcher, env: Env) -> StackShare:
        spec = {k: v for k, v in matcher.spec.items() if k not in ("after_pause", "without_own")}
        found = match_stack(env.index, spec, env.skip)  # it reads no `of`
        if matcher.spec.get("without_own"):
            found = without_own(found, env)
        if matcher.spec.get("after_pause"):
            return after_pause(found, spec["self"], env)
        if "of" not in matcher.spec:
            return found
        index = env.index
        whole = index.weight(index.st.rows_with(index.lut(matcher.spec["of"])))
        return StackPart(
            **{f.name: getattr(found, f.name) for f in fields(found)}, of_share=found.count / whole if whole else None
        )

    def doc(self, spec: Any) -> str:
        text = stack_doc({k: v for k, v in spec.items() if k not in ("after_pause", "without_own")})
        text += "; only samples at the instruction after a PAUSE" if spec.get("after_pause") else ""
        return text + ("; pmuprof's own connections' samples left out" if spec.get("without_own") else "")

    def subject(self, spec: Any) -> str:
        return ""

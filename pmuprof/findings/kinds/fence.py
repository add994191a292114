"""The ``fence`` kind: skid-corrected samples on full fences, by the function they sit in (analysis skid.fences)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ...model.analysis import FenceSite
from ..evidence import Evidence, pct
from .base import Env, Kind, Matcher, SpecCtx

FENCE_KEYS = ("in", "not_in")


@dataclass(frozen=True)
class FenceFunction:
    """A function holding full fences, with the skid-corrected samples on them."""

    function: str
    share: float
    samples: int
    forms: tuple[str, ...]  # mfence, lock or, xchg

    def to_json(self) -> dict[str, Any]:
        return {"function": self.function, "share": self.share, "samples": self.samples, "forms": list(self.forms)}

    def words(self) -> str:
        return f"{self.function} {pct(self.share)} ({', '.join(self.forms)})"


@dataclass(frozen=True, eq=False)
class FenceShare(Evidence):
    """Samples on full fences (the forms analysis/skid.py lists) in the functions asked for."""

    value: float
    share: float
    count: int
    functions: tuple[FenceFunction, ...]  # hottest first
    names: str  # 'l_find 2.1 % (mfence), ...': the functions in words

    def to_json(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "share": self.share,
            "count": self.count,
            "functions": [f.to_json() for f in self.functions],
            "names": self.names,
        }

    def counted(self) -> int | None:
        return self.count

    def words(self, share: bool) -> str:
        if not self.count:
            return "none (0 samples on full fences)"
        return f"{pct(self.share)} of samples on full fences: {self.names}"


def own_sites(sites: list[FenceSite], env: Env) -> list[FenceSite]:
    """With several processes, each process's part of the fence samples: skid correction counts a binary's
    leaf samples whoever ran them, so a site's samples are shared out by each process's own self samples in
    that function (of its own binary when the process's binary is known), never copied to every process."""
    profile, index = env.index.profile, env.index
    if profile is None:  # a bare index: nothing to share out by
        return sites
    info = profile.process_info(index.process)
    exe = (env.facts.target.exe if env.facts.target else "") or (info.binary if info else "")
    mine, everyone = index.st.self_counts(), profile.self_counts()
    out = []
    for site in sites:
        if exe and site.binary != exe:
            continue
        part = (
            round(site.samples * mine.get(site.function, 0) / everyone[site.function])
            if everyone.get(site.function)
            else 0
        )
        if part:
            out.append(replace(site, samples=part, share=part / index.total if index.total else 0.0))
    return out


class Fence(Kind[FenceShare]):
    name = "fence"
    guide = "`fence` (skid-corrected samples on full fences in functions `in` / `not_in` patterns)"
    share = True

    def validate(self, ctx: SpecCtx, spec: Any, line: int) -> Any:
        spec = ctx.mapping(spec, line, "fence matcher")
        ctx.keys(spec, FENCE_KEYS, "fence matcher")
        return {k: ctx.patterns(v, spec.line_of(k), f"fence.{k}") for k, v in spec.items()}

    def evaluate(self, matcher: Matcher, env: Env) -> FenceShare | None:
        skid = env.facts.analysis.skid
        if skid is None:
            env.missing.append("fences: no skid-corrected instructions (native helper off, or no binary found)")
            return None
        inside, outside = matcher.spec.get("in"), matcher.spec.get("not_in")
        sites = [
            s
            for s in skid.fences
            if (inside is None or inside.matches(s.function))
            and not (outside is not None and outside.matches(s.function))
        ]
        total = skid.samples_total
        if env.index.profile is not None and len(env.index.profile.processes()) > 1:
            sites, total = own_sites(sites, env), env.index.total
        count = sum(s.samples for s in sites)
        share = round(count / total, 6) if total else sum(s.share for s in sites)
        rows = tuple(FenceFunction(s.function, s.share, s.samples, tuple(s.forms)) for s in sites)
        return FenceShare(share, share, count, rows, ", ".join(r.words() for r in rows[:5]) or "none")

    def doc(self, spec: Any) -> str:
        return (
            "; ".join(
                f"fences {key.replace('_', ' ')}: " + ", ".join(f"`{p}`" for p in pats.patterns)
                for key, pats in spec.items()
            )
            or "fences in any function"
        )

    def subject(self, spec: Any) -> str:
        return ""

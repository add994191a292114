"""The matcher-kind contract: validate a rule's spec, evaluate it, say its value in words, document it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol
from collections.abc import Mapping

from ..evidence import Fact
from ..facts import number as as_number

if TYPE_CHECKING:
    from ..facts import Facts
    from ..patterns import PatternSet
    from ..stackmatch import StackIndex


@dataclass(frozen=True)
class Matcher:
    """One evidence item of a rule as the schema validated it: its name, matcher kind and spec."""

    name: str
    kind: str  # a name of findings/kinds KINDS
    spec: Any  # str | tuple | Mapping[str, PatternSet] as the kind needs
    about: str = ""


@dataclass(frozen=True)
class Declared:
    """One evidence item as its rule declares it: the name, the matcher kind and spec, what it measures."""

    name: str
    kind: str  # stack, latch, variable, status, derived, ... (a name of findings/kinds KINDS)
    what: str  # the matcher's subject for kinds that name one (variable, status, path, derived), else ""
    about: str = ""  # the rule's ``about`` text


class SpecCtx(Protocol):
    """What a kind's ``validate`` may use of the schema's file context (findings/schema.py ``_Ctx``)."""

    def fail(self, line: int, msg: str, fix: str = ...) -> Exception: ...
    def mapping(self, value: Any, line: int, what: str) -> Any: ...
    def text(self, value: Any, line: int, what: str) -> str: ...
    def keys(self, data: Any, allowed: Any, what: str) -> None: ...
    def strings(self, value: Any, line: int, what: str) -> tuple[str, ...]: ...
    def patterns(self, value: Any, line: int, what: str) -> PatternSet: ...


@dataclass(frozen=True)
class Env:
    """What a matcher is evaluated against: one process's stacks and facts; ``missing`` collects why not."""

    index: StackIndex
    facts: Facts
    skip: PatternSet  # frames to skip when naming callers
    missing: list[str]


def pct(share: float) -> str:
    """A share (0..1) as a percentage: '35.0 %', '<0.1 %' for tiny non-zero shares."""
    if 0 < abs(share) < 0.0005:
        return "<0.1 %"
    return f"{100.0 * share:.1f} %"


def number(value: Any) -> str:
    """A count with separators; a fraction with up to three significant decimals; booleans as words."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer() and abs(value) >= 1):
        return f"{int(value):,}"
    if isinstance(value, float):
        return f"{value:,.2f}" if abs(value) >= 10 else f"{value:.3g}"
    return str(value)


class Kind:
    """One matcher kind. Subclasses set ``name`` and override what differs from these defaults."""

    name = ""
    guide = ""  # its part of the `evidence` row of docs/rules.md "Writing rules" ("" = said by another kind)
    about = ""  # the report's words for an item without its own ``about``, "{}" = the subject
    stacks = False  # its value holds matched stacks: a share of the samples, a caller chain, grouping
    share = False  # its value is a fraction of the samples

    def validate(self, ctx: SpecCtx, spec: Any, line: int) -> Any:
        """The spec as the engine reads it; ``ctx.fail`` names file:line for a bad one."""
        return ctx.text(spec, line, self.name)

    def evaluate(self, matcher: Matcher, env: Env) -> Any:
        """The evidence value; None means 'not known' and ``env.missing`` says why."""
        raise NotImplementedError

    def doc(self, spec: Any) -> str:
        """What the matcher reads, for docs/rules.md and `rules show`."""
        return f"{self.name.replace('_', ' ')} `{spec}`"

    def subject(self, spec: Any) -> str:
        """What it reads when it names one thing ('innodb_purge_threads', 'skid.pause_share'), else ''."""
        return spec if isinstance(spec, str) else ""

    def offcpu(self, spec: Any) -> bool:
        """Whether its value is off-CPU time (graded in threads blocked, with no ``min_samples``)."""
        return False

    def words(self, item: Declared, value: Mapping[str, Any]) -> str:
        """A value that is a mapping, in words (scalars are said by ``scalar_words``)."""
        return value_words(item, value, is_share(item, self))


def is_share(item: Declared, kind: Kind | None) -> bool:
    """Whether an item's value is a fraction of the samples (stack and latch shares, *_share paths)."""
    return (kind is not None and kind.share) or item.what.endswith("share") or item.name.endswith("share")


def scalar_words(item: Declared, value: Any, share: bool) -> str:
    """A plain value in words: shares as %, counts with separators, booleans as yes/no."""
    if isinstance(value, bool) or value is None:
        return {True: "yes", False: "no", None: "not recorded"}[value]
    if isinstance(value, (list, tuple)):
        return ", ".join(scalar_words(item, v, share) for v in value) or "none"
    if isinstance(value, (int, float)):
        return f"{pct(value)} of samples" if share and 0 <= value <= 1 else number(value)
    return str(value) or "not recorded"


def stack_words(value: Mapping[str, Any]) -> str:
    """A share of the samples: '35.0 % of samples (1,234 samples)', with the latch modes when known."""
    count = int(value.get("count") or 0)
    if not count:
        return "none (0 samples)"
    text = f"{pct(float(value.get('share') or 0.0))} of samples ({count:,} samples)"
    modes = value.get("modes_text")
    return text + (f"; modes: {modes}" if modes and modes != "not known" else "")


def value_words(item: Declared, value: Mapping[str, Any], share: bool) -> str:
    """A mapping value by its shape, for kinds with no words of their own (and items of no known kind)."""
    if {"count", "share"} <= set(value):
        return stack_words(value)
    if "summary" in value:
        return str(value.get("summary") or scalar_words(item, value.get("value"), share))
    return scalar_words(item, value.get("value"), share)


def fact(value: Any) -> Fact | None:
    """A looked-up fact as evidence; None when it was not recorded."""
    if value is None:
        return None
    num = as_number(value) if not isinstance(value, (Mapping, list)) else None
    return Fact(num if num is not None and not isinstance(value, str) else value, num)

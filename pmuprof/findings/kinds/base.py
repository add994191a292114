"""The matcher-kind contract: validate a rule's spec, evaluate it, say its value in words, document it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar
from collections.abc import Mapping

from ..evidence import Evidence, Fact
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


E = TypeVar("E", bound=Evidence)


class Kind(Generic[E]):
    """One matcher kind, whose values are of type ``E``. Subclasses set ``name`` and override what differs
    from these defaults."""

    name = ""
    guide = ""  # its part of the `evidence` row of docs/rules.md "Writing rules" ("" = said by another kind)
    about = ""  # the report's words for an item without its own ``about``, "{}" = the subject
    stacks = False  # its value holds matched stacks: a share of the samples, a caller chain, grouping
    share = False  # its value is a fraction of the samples

    def validate(self, ctx: SpecCtx, spec: Any, line: int) -> Any:
        """The spec as the engine reads it; ``ctx.fail`` names file:line for a bad one."""
        return ctx.text(spec, line, self.name)

    def evaluate(self, matcher: Matcher, env: Env) -> E | None:
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

    def words(self, item: Declared, value: E) -> str:
        """Its value in the report's words: by default as the value says itself."""
        return value.words(is_share(item, self))


def is_share(item: Declared, kind: Kind[Any] | None) -> bool:
    """Whether an item's value is a fraction of the samples (stack and latch shares, *_share paths)."""
    return (kind is not None and kind.share) or item.what.endswith("share") or item.name.endswith("share")


def fact(value: Any) -> Fact | None:
    """A looked-up fact as evidence; None when it was not recorded."""
    if value is None:
        return None
    num = as_number(value) if not isinstance(value, (Mapping, list)) else None
    return Fact(num if num is not None and not isinstance(value, str) else value, num)

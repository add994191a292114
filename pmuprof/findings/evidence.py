"""Frozen evidence values: the base every matcher's value derives from, the plain looked-up fact, their words."""

from __future__ import annotations

from dataclasses import Field, dataclass, fields
from functools import cached_property
from types import MappingProxyType
from typing import Any, ClassVar
from collections.abc import Mapping

# A value as recorded: a scalar, or the list or object a path in run.json / mysql.json names
Value = str | int | float | bool | list[Any] | dict[str, Any] | None


class Evidence:
    """A frozen evidence value: each matcher kind's is a frozen dataclass deriving from this one.

    Code reads its typed fields. Templates and conditions, which name fields from YAML (``{name.field}``,
    ``evidence: name.field``), read ``named``: the value as findings.json writes it (``to_json``, before
    the engine rounds floats). What the engine and the writers ask of every value is a method here, so
    none of them guesses a value's kind from its keys."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]  # every evidence type is a dataclass
    value: Value  # what a threshold, a condition and a bare ``{name}`` read

    def to_json(self) -> dict[str, Any]:
        """By default its fields, in order; a type whose JSON differs from its fields says how."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @cached_property
    def named(self) -> Mapping[str, Any]:
        """Its fields by the names rules use: ``to_json``, read-only."""
        return MappingProxyType(self.to_json())

    def words(self, share: bool) -> str:
        """The value in the report's words (``share``: it is a fraction of the samples)."""
        return scalar_words(self.value, share)

    def counted(self) -> int | None:
        """The samples (off-CPU: microseconds) behind it when it counts matched stacks, else None."""
        return None

    def chain_texts(self) -> tuple[str, ...]:
        """Its top caller chains in words, hottest first (none when it holds no stacks)."""
        return ()

    def share_basis(self) -> str:
        """What its value is a share of when that is not the process's samples ('' = the samples)."""
        return ""


class Blocked(Evidence):
    """Off-CPU time as evidence (an ``offcpu`` matcher's, an off-CPU derived fact's): a finding graded on it
    is of the off-CPU time, and says the seconds blocked behind it."""

    us: int  # microseconds blocked
    share: float  # of the process's off-CPU time


class Summarized(Evidence):
    """A derived fact that says itself in one line."""

    summary: str

    def words(self, share: bool) -> str:
        return self.summary or scalar_words(self.value, share)


@dataclass(frozen=True, eq=False)
class Fact(Evidence):
    """A looked-up fact: its value (a number when it reads as one) and that number."""

    value: Value
    number: float | None


def pct(share: float) -> str:
    """A share (0..1) as a percentage: '35.0 %', '<0.1 %' for tiny non-zero shares."""
    if 0 < abs(share) < 0.0005:
        return "<0.1 %"
    return f"{100.0 * share:.1f} %"


def number(value: object) -> str:
    """A count with separators; a fraction with up to three significant decimals; booleans as words."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer() and abs(value) >= 1):
        return f"{int(value):,}"
    if isinstance(value, float):
        return f"{value:,.2f}" if abs(value) >= 10 else f"{value:.3g}"
    return str(value)


def scalar_words(value: object, share: bool) -> str:
    """A plain value in words: shares as %, counts with separators, booleans as yes/no."""
    if isinstance(value, bool) or value is None:
        return {True: "yes", False: "no", None: "not recorded"}[value]
    if isinstance(value, (list, tuple)):
        return ", ".join(scalar_words(v, share) for v in value) or "none"
    if isinstance(value, (int, float)):
        return f"{pct(value)} of samples" if share and 0 <= value <= 1 else number(value)
    return str(value) or "not recorded"

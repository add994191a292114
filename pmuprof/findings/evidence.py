"""Frozen evidence values: the base every matcher's value derives from, and the plain looked-up fact."""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cached_property
from typing import Any
from collections.abc import Iterator, Mapping


class Evidence(Mapping[str, Any]):
    """A frozen evidence value. Code reads its fields; templates and conditions read them by name
    (``{name.field}``, ``evidence: name.field``) through this read-only mapping, which is ``to_json``:
    the value as findings.json writes it (before rounding)."""

    def to_json(self) -> dict[str, Any]:
        """By default its fields, in order; a type whose JSON differs from its fields says how."""
        return {f.name: getattr(self, f.name) for f in fields(self)}  # type: ignore[arg-type]

    @cached_property
    def _view(self) -> dict[str, Any]:
        return self.to_json()

    def __getitem__(self, key: str) -> Any:
        return self._view[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._view)

    def __len__(self) -> int:
        return len(self._view)


@dataclass(frozen=True, eq=False)
class Fact(Evidence):
    """A looked-up fact: its value (a number when it reads as one) and that number."""

    value: Any
    number: float | None

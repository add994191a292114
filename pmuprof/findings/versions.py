"""Server version ranges in rule files: ``*``, ``>=5.7``, ``>=8.0.16, <8.4`` (comma = and, `` | `` = or)."""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Sequence

Version = tuple[int, ...]
_TERM = re.compile(r"^(>=|<=|==|!=|>|<|=)?\s*(\d+(?:\.\d+)*)$")
_OPS: dict[str, Callable[[Version, Version], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
    "==": operator.eq,
    "=": operator.eq,
    "!=": operator.ne,
}


def parse_version(text: str) -> Version:
    """``10.11.6-MariaDB-0+deb12u1`` → (10, 11, 6); no leading digits → ()."""
    m = re.match(r"^\s*(\d+(?:\.\d+)*)", str(text))
    return tuple(int(p) for p in m.group(1).split(".")) if m else ()


def parse_spec(spec: str) -> list[tuple[str, Version]]:
    """Parse a range (each alternative of an ``a | b`` one); raise ValueError naming the bad term."""
    spec = str(spec).strip()
    if "|" in spec:
        return [term for part in spec.split("|") for term in parse_spec(part)]
    if spec in ("*", "any", ""):
        return []
    terms = []
    for raw in spec.split(","):
        m = _TERM.match(raw.strip())
        if not m:
            raise ValueError(f"'{raw.strip()}' is not like '>=8.0.16'")
        terms.append((m.group(1) or "==", tuple(int(p) for p in m.group(2).split("."))))
    return terms


def _cmp_tuple(version: Version, bound: Version) -> tuple[Version, Version]:
    """Compare on the bound's precision: 8.0.36 == 8.0 under '==8.0'."""
    return version[: len(bound)] if len(version) >= len(bound) else version + (0,) * (len(bound) - len(version)), bound


def in_range(version: Sequence[int] | None, spec: str) -> bool:
    """True when the version satisfies the range; an unknown version satisfies every range."""
    if not version:
        return True
    if "|" in str(spec):
        return any(in_range(version, part) for part in str(spec).split("|"))
    ver = tuple(int(v) for v in version)
    for op, bound in parse_spec(spec):
        left, right = _cmp_tuple(ver, bound) if op in ("==", "=", "!=") else (ver, bound)
        if not _OPS[op](left, right):
            return False
    return True

"""Bounded-time name matching: globs compiled so they cannot backtrack, ``re:`` regexes checked before use."""

from __future__ import annotations

import functools
import re
import sys
from dataclasses import dataclass
from typing import Any, Protocol

if sys.version_info >= (3, 11):
    from re import _parser as _sre_parse  # type: ignore[attr-defined]
else:  # pragma: no cover - Python 3.10
    import sre_parse as _sre_parse

# Rules see the first MAX_MATCH_CHARS characters of a frame name: a glob costs O(length), a checked
# regex at most O(length^2 * MAX_BOUNDED_PRODUCT), so one frame never costs more than milliseconds.
MAX_MATCH_CHARS = 1024
MAX_UNBOUNDED = 1  # unbounded repeats (*, +, {n,}) one after another in a regex
MAX_BOUNDED_PRODUCT = 16  # product of the spans of bounded repeats (?, {m,n}) one after another
_ADVICE = "use a glob (any number of *, matched in linear time) or split it into several patterns"


class Matcher(Protocol):
    def search(self, name: str) -> Any: ...


def _piece(text: str) -> str:
    return "".join("." if ch == "?" else re.escape(ch) for ch in text)


def glob_regex(pattern: str, index: int = 0) -> str:
    """A glob as a regex that cannot backtrack: each piece between stars is placed at its leftmost
    match inside a lookahead (atomic in Python) and consumed by a backreference to it, so a failed
    match never retries earlier pieces. Leftmost placement is exact for globs; time is linear."""
    parts = pattern.split("*")
    if len(parts) == 1:
        return _piece(parts[0])
    out = [_piece(parts[0])]
    for i, piece in enumerate(parts[1:-1]):
        group = f"g{index}_{i}"
        out.append(f"(?=(?P<{group}>.*?{_piece(piece)}))(?P={group})")
    return "".join(out) + ".*" + _piece(parts[-1])


@dataclass(frozen=True)
class GlobSet:
    """Whole-name globs (``*`` any run of characters, ``?`` one character) as one linear-time regex."""

    globs: tuple[str, ...]

    @functools.cached_property
    def regex(self) -> re.Pattern[str]:
        """Compiled on first use: a glob is valid by construction, so loading rules (before a capture
        records) does not pay for the regexes of rules the report may never need to match."""
        body = "|".join(f"(?:{glob_regex(g, k)})" for k, g in enumerate(self.globs))
        return re.compile(rf"\A(?:{body})\Z", re.DOTALL)

    def search(self, name: str) -> bool:
        return self.regex.match(name) is not None


def _name(op: Any) -> str:
    return getattr(op, "name", str(op))


def _variable(sub: Any) -> bool:
    """Whether a parsed subpattern holds a repeat of variable length or an alternation."""
    for op, av in sub:
        name = _name(op)
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") and (av[0] != av[1] or _variable(av[2])):
            return True
        if name == "BRANCH" or (name == "SUBPATTERN" and _variable(av[-1])):
            return True
        if name == "ATOMIC_GROUP" and _variable(av):
            return True
    return False


def _cost(sub: Any, text: str) -> tuple[int, int]:
    """(unbounded repeats, product of bounded spans) along the worst path of a parsed subpattern."""
    unbounded, product = 0, 1
    for op, av in sub:
        name = _name(op)
        if name in ("GROUPREF", "GROUPREF_EXISTS"):
            raise re.error(f"backreferences and conditionals are not allowed in rules: {text}")
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, body = av
            if high > 1 and _variable(body):  # (a+)+, (a|ab)*: exponential; (foo|bar)? is fine
                raise re.error(
                    f"a repeat of a repeat or of an alternation can take exponential time: {text}; {_ADVICE}"
                )
            inner = _cost(body, text)
            unbounded += inner[0] + (high == _sre_parse.MAXREPEAT)
            product *= inner[1] * (1 if high == _sre_parse.MAXREPEAT else high - low + 1)
        elif name == "SUBPATTERN" or name == "ATOMIC_GROUP":
            inner = _cost(av[-1] if name == "SUBPATTERN" else av, text)
            unbounded, product = unbounded + inner[0], product * inner[1]
        elif name == "BRANCH":
            costs = [_cost(alt, text) for alt in av[1]]
            unbounded += max(c[0] for c in costs)
            product *= max(c[1] for c in costs)
        elif name in ("ASSERT", "ASSERT_NOT") and _cost(av[1], text) != (0, 1):
            raise re.error(f"lookarounds may not hold repeats: {text}; {_ADVICE}")
    return unbounded, product


@dataclass(frozen=True)
class CheckedRegex:
    """A Python regex whose backtracking is bounded (see checked_regex)."""

    regex: re.Pattern[str]

    def search(self, name: str) -> bool:
        return self.regex.search(name) is not None


def checked_regex(text: str) -> CheckedRegex:
    """Compile ``text`` after checking it cannot backtrack badly: no backreferences, no nested repeats,
    at most MAX_UNBOUNDED unbounded repeat and bounded spans multiplying to MAX_BOUNDED_PRODUCT.
    Raises re.error with the reason (the rule loader reports it with file:line)."""
    compiled = re.compile(text)
    unbounded, product = _cost(_sre_parse.parse(text), text)
    if unbounded > MAX_UNBOUNDED:
        raise re.error(
            f"{unbounded} unbounded repeats (*, +, {{n,}}) in one regex: its time grows as the "
            f"name length to the power {unbounded + 1}: {text}; {_ADVICE}"
        )
    if product > MAX_BOUNDED_PRODUCT:
        raise re.error(
            f"bounded repeats (?, {{m,n}}) spanning {product} combinations (at most "
            f"{MAX_BOUNDED_PRODUCT}): {text}; {_ADVICE}"
        )
    return CheckedRegex(compiled)

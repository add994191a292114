"""Safe message templates: ``{name}``, ``{name.field}``, ``{name:pct}``, ``{x:.1f}``; no code.

A value that is not known never prints as a stand-in: the part of the text that needs it is left out.
"""

from __future__ import annotations

import re
import string
from typing import Any
from collections.abc import Mapping

from .evidence import Evidence

_FORMATTER = string.Formatter()
_SPEC_CHARS = set("0123456789.,_%+-<>^= dfegsxXn")
GAP = "\ue000"  # where a value was not known, while the text around it is cut
_PARENS = re.compile(r"\s?\(([^()]*\ue000[^()]*)\)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`'\"(\ue000])")
_CLAUSE = re.compile(r";\s+|\s+—\s+")


def _fields(text: str) -> list[tuple[str, str, str | None]]:
    return [(name, spec or "", conv) for _, name, spec, conv in _FORMATTER.parse(text) if name is not None]


def check_template(text: str, names: set[str]) -> str:
    """A problem with the template as one line, or '' when it is fine."""
    try:
        fields = _fields(text)
    except ValueError as err:
        return f"{err} (use {{{{ and }}}} for literal braces)"
    for name, spec, conv in fields:
        if conv is not None:
            return f"conversions like !{conv} are not allowed in '{{{name}}}'"
        if not name or any(c in name for c in "[]()"):
            return f"field '{{{name}}}' must be an evidence name, optionally .field"
        if name.split(".")[0] not in names:
            return f"field '{{{name}}}' refers to unknown evidence"
        if spec and spec not in ("pct", "us", "list") and (not set(spec) <= _SPEC_CHARS or re.search(r"\d{3}", spec)):
            return f"format '{spec}' in '{{{name}}}' is not allowed"
    return ""


def lookup(values: Mapping[str, Any], dotted: str) -> Any:
    """``a.b``: an evidence value's field by its findings.json name (``Evidence.named``), then keys of what
    that holds (never attributes); None when absent."""
    cur: Any = values
    for part in dotted.split("."):
        named = cur.named if isinstance(cur, Evidence) else cur
        if not isinstance(named, Mapping) or part not in named:
            return None
        cur = named[part]
    return cur


def scalar(value: Any) -> Any:
    """What a condition, a threshold or a bare ``{name}`` reads: an evidence value's ``value``."""
    return value.value if isinstance(value, Evidence) else value


def known(value: Any) -> bool:
    """Whether a looked-up value can be said: None and an empty text are not known."""
    value = scalar(value)
    return value is not None and value != "" and value != ()


def format_value(value: Any, spec: str) -> str:
    """A known value in words (see ``known``)."""
    value = scalar(value)
    if spec == "pct":
        return f"{float(value) * 100:.1f}%" if isinstance(value, (int, float)) else str(value)
    if spec == "us":
        return f"{float(value):.1f} µs" if isinstance(value, (int, float)) else str(value)
    if spec == "list" or isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value) if isinstance(value, (list, tuple)) else str(value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if spec:
        try:
            return format(value, spec)
        except (ValueError, TypeError):
            return str(value)
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def render(text: str, values: Mapping[str, Any], code: bool = False) -> str:
    """Fill a checked template from evidence; what needs an unknown value is left out (see ``prune``;
    ``code``: the text is code, each line of it goes whole)."""
    out = []
    for literal, name, spec, _ in _FORMATTER.parse(text):
        out.append(literal)
        if name is not None:
            value = lookup(values, name)
            out.append(format_value(value, spec or "") if known(value) else GAP)
    return prune("".join(out), code)


def prune(text: str, code: bool = False) -> str:
    """Leave out what holds a gap: in code (SQL, my.cnf, shell) or a text of several lines the line; in
    prose the smallest of its clause inside parentheses, its clause of the sentence (between '; ' or
    ' — '), or its sentence."""
    if GAP not in text:
        return text
    if code or "\n" in text.strip():
        return "\n".join(line for line in text.split("\n") if GAP not in line)
    while GAP in text:
        cut = _PARENS.sub(_in_parens, text, count=1)
        text = cut if cut != text else _sentences(text)
    return re.sub(r"\s+([.,;:])(?=\s|$)", r"\1", text).strip()  # no space left before punctuation


def _in_parens(m: re.Match[str]) -> str:
    """The parenthesis without its clauses that hold a gap; nothing (nor the space before it) when none is left."""
    kept = [part for part in m.group(1).split("; ") if GAP not in part]
    lead = m.group(0)[: m.start(1) - m.start(0) - 1]  # the space before '(' when there was one
    return f"{lead}({'; '.join(kept)})" if kept else ""


def _sentences(text: str) -> str:
    """Each sentence without its clauses that hold a gap; the sentence goes when none is left."""
    out = []
    for sentence in _SENTENCE_END.split(text):
        if GAP not in sentence:
            out.append(sentence)
            continue
        seps = _CLAUSE.findall(sentence)
        parts = _CLAUSE.split(sentence)
        kept = [(sep, part) for sep, part in zip(["", *seps], parts) if GAP not in part]
        if not kept:
            continue
        joined = kept[0][1] + "".join(sep + part for sep, part in kept[1:])
        if GAP in parts[-1] and sentence.rstrip()[-1:] in ".!?":
            joined = joined.rstrip(" ,;:") + sentence.rstrip()[-1]
        out.append(joined[:1].upper() + joined[1:] if GAP in parts[0] else joined)
    return " ".join(out)

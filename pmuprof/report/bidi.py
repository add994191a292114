"""Bidirectional-text controls (U+202E ...) in names made visible, so a name cannot reorder the text around it.

A database, thread or statement name is chosen by whoever runs queries on the server. Raw, U+202E
(RIGHT-TO-LEFT OVERRIDE) makes a report show text in another order than it holds; the writers show
each control as its escape (``\\u202e``) instead.
"""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

# LRE RLE PDF LRO RLO, LRI RLI FSI PDI, LRM RLM, ALM.
CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
_VISIBLE = str.maketrans({c: f"\\u{ord(c):04x}" for c in CONTROLS})
# Inside a JSON string a backslash is written twice: the page's script then reads "\u202e" as text.
_VISIBLE_IN_JSON = str.maketrans({c: f"\\\\u{ord(c):04x}" for c in CONTROLS})


def _has_control(text: str) -> bool:
    """Whether ``text`` holds a bidi control. str.translate looks every character up in its table
    (0.37 s of CPU for a 3.4 MB report page, which is translated twice), while the controls are rare
    and all non-ASCII: isascii() and twelve substring searches answer in milliseconds."""
    return not text.isascii() and any(c in text for c in CONTROLS)


def visible(text: str) -> str:
    """``text`` with every bidi control written as its escape."""
    return text.translate(_VISIBLE) if _has_control(text) else text


def visible_in_json(text: str) -> str:
    """A JSON document whose strings, once decoded, show every bidi control as its escape."""
    return text.translate(_VISIBLE_IN_JSON) if _has_control(text) else text


def finalize(value: Any) -> Any:
    """Jinja's finalize: every value a template prints, bidi controls made visible (Markup stays Markup)."""
    if isinstance(value, Markup):
        return Markup(visible(str(value))) if _has_control(value) else value
    if isinstance(value, str):
        return visible(value)
    return value

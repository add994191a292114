"""Render payloads to one self-contained HTML file through the one Jinja environment (autoescape on)."""

from __future__ import annotations

import functools
import json
import math
import os
import re
from pathlib import Path
from typing import Any
from collections.abc import Iterator

import jinja2
from markupsafe import Markup, escape

from .. import __version__, outfile
from . import bidi
from ..paths import cache_dir, templates_dir
from .cards import report_cards
from .payload import ReportPayload
from .verdict import margin_text

_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_ASSET_SUFFIXES = (".js", ".css")


def dumps(data: Any) -> str:
    """Canonical JSON: sorted keys, no spaces, UTF-8 kept (the same data gives the same bytes); a value with
    ``as_json()`` (a page payload) is written as what that returns."""
    return json.dumps(
        data, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_as_json
    )


def _as_json(value: Any) -> Any:
    as_json = getattr(value, "as_json", None)
    if as_json is None:
        raise TypeError(f"{type(value).__name__} is not JSON data")
    return as_json()


def embed_json(data: Any) -> Markup:
    """JSON safe inside <script type="application/json">: no '<', '>', '&', U+2028/2029 left raw, and
    bidi controls decoding to their visible escapes."""
    return Markup("".join(json_pieces(data)))


def json_pieces(data: Any) -> Iterator[str]:
    """``embed_json(data)`` a piece at a time (what it joins): the page's data is never one string, which
    for a profile of 2 M distinct frames was 80 MB, twice over while it was escaped. Every escape maps one
    character, so escaping the pieces is escaping the whole."""
    for piece in _pieces(data):
        text = bidi.visible_in_json(piece)
        for raw, escaped in _JSON_ESCAPES.items():
            text = text.replace(raw, escaped)
        yield text


_LIST_PIECE = 1 << 15  # list items written a piece at a time


def _pieces(value: Any) -> Iterator[str]:
    """``dumps(value)`` in pieces: an object key by key (sorted, as dumps sorts), a long list a slice at a
    time; anything else (and an object with other than text keys) whole."""
    if not isinstance(value, (dict, list, tuple, str, int, float, type(None))):
        value = _as_json(value)  # as dumps' ``default`` does
    if isinstance(value, dict) and len(value) > 1 and all(isinstance(k, str) for k in value):
        yield "{"
        for n, key in enumerate(sorted(value)):
            yield ("," if n else "") + dumps(key) + ":"
            yield from _pieces(value[key])
        yield "}"
    elif isinstance(value, (list, tuple)) and len(value) > _LIST_PIECE:
        for lo in range(0, len(value), _LIST_PIECE):
            yield ("[" if not lo else ",") + dumps(list(value[lo : lo + _LIST_PIECE]))[1:-1]
        yield "]"
    else:
        yield dumps(value)


def _asset(env: jinja2.Environment, name: str) -> Markup:
    """An inline JS/CSS file from templates/, refusing anything that could close its element."""
    if not name.endswith(_ASSET_SUFFIXES):
        raise ValueError(f"not an inline asset: {name}")
    source, _, _ = env.loader.get_source(env, name)  # type: ignore[union-attr]
    lowered = source.lower()
    if "</script" in lowered or "</style" in lowered or "http://" in lowered or "https://" in lowered:
        raise ValueError(f"{name}: inline assets must not close their element or load from the network")
    return Markup(source)


def _pct(value: Any, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{100.0 * float(value):.{digits}f} %"


def _num(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.2f}"
    return f"{int(value):,}"


_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def code_spans(text: Any) -> Markup:
    """A sentence written with Markdown `code` spans, as HTML: escaped first, then each pair of backticks
    around a non-empty span becomes <code>; an unpaired backtick stays as text. The text is untrusted
    (symbol names, processlist states): escaping comes before any markup is added."""
    return Markup(_CODE_SPAN.sub(r"<code>\1</code>", str(escape(text))))


def soft_breaks(text: Any) -> Markup:
    """A name or value as HTML that may wrap after its commas, semicolons, colons and underscores
    (``a,b,c`` lists and ``innodb_*`` names have no space to wrap at) rather than between any two letters:
    each piece escaped on its own (an entity's ';' is no separator), joined with a <wbr>."""
    pieces = re.split(r"(?<=[,;:_])(?=\S)", str(text))
    return Markup("<wbr>").join(escape(piece) for piece in pieces)


def _safe_url(url: Any) -> str:
    """Only http(s) references become links; anything else renders as text."""
    text = str(url)
    return text if text.startswith(("https://", "http://")) else ""


class _QuietCache(jinja2.FileSystemBytecodeCache):
    """Compiled templates kept between runs (a report under a loaded host spent seconds compiling them);
    a cache that cannot be read or written is only a slower report."""

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except (OSError, ValueError, EOFError):
            bucket.reset()

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError:
            pass


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """The cache in this user's own directory, or none: compiled code another user could write would run
    as root here."""
    where = cache_dir("templates")
    try:
        where.mkdir(parents=True, exist_ok=True, mode=0o700)
        st = where.stat()
    except OSError:
        return None
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        return None
    return _QuietCache(str(where))


@functools.lru_cache(maxsize=4)
def environment(directory: str = "") -> jinja2.Environment:
    """The one Jinja environment: templates/ loader, autoescape everywhere, strict undefined."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(directory or str(templates_dir())),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=bidi.finalize,
        bytecode_cache=_bytecode_cache(),
    )
    env.globals["asset"] = functools.partial(_asset, env)
    env.filters["pct"] = _pct
    env.filters["margin"] = margin_text
    env.filters["num"] = _num
    env.filters["safe_url"] = _safe_url
    env.filters["code_spans"] = code_spans
    env.filters["soft_breaks"] = soft_breaks
    env.filters["embed_json"] = embed_json
    env.filters["compact"] = dumps
    env.globals["version"] = __version__
    return env


_JSON_SLOT = "\x00pmuprof-json\x00"  # where base.html.j2 embeds the payload's JSON (no template holds a NUL)


def stream(template: str, payload: Any, **context: Any) -> Iterator[str]:
    """A page template rendered a piece at a time, with the payload both as Jinja context and as the
    embedded JSON (``json_pieces``); ``context``: what else the template reads (the report's cards, the SVG
    pictures pmuprof drew as Markup: escaped text inside, inlined as they are and kept out of the JSON)."""
    for part in environment().get_template(template).generate(p=payload, json_slot=Markup(_JSON_SLOT), **context):
        before, slot, after = part.partition(_JSON_SLOT)
        yield before
        if slot:
            yield from json_pieces(payload)
            yield after


def render(template: str, payload: Any, **context: Any) -> str:
    """The page as one string (``stream`` joined)."""
    return "".join(stream(template, payload, **context))


def write_page(path: Path, template: str, payload: Any, **context: Any) -> Path:
    """Write a page as it renders (atomic, never through a link, as outfile writes every output): a report
    of millions of frames never holds its page, or its data's JSON, as one string."""
    with outfile.open_binary(path) as out:
        for piece in stream(template, payload, **context):
            out.write(piece.encode("utf-8", "surrogateescape"))
    return Path(path)


def _report_context(payload: ReportPayload, wall_svg: str) -> dict[str, Any]:
    """What report.html shows beside the payload: its summary's cards (report/cards.py) and the wall-clock picture."""
    return {"cards": report_cards(payload), "wall_svg": Markup(wall_svg)}


def render_report(payload: ReportPayload, wall_svg: str = "") -> str:
    """report.html as one string."""
    return render("report.html.j2", payload, **_report_context(payload, wall_svg))


def write_report(path: Path, payload: ReportPayload, wall_svg: str = "") -> Path:
    """report.html written as it renders (``write_page``)."""
    return write_page(path, "report.html.j2", payload, **_report_context(payload, wall_svg))


def write_text(path: Path, text: str) -> Path:
    """Write an output page through outfile (atomic; devices/FIFOs in place; never through a link)."""
    return outfile.write_text(path, text)


write_html = write_text  # name used by cli/history.py

"""flame.svg: a static FlameGraph-style picture of the profile (no script), for trackers that take no HTML."""

from __future__ import annotations

import hashlib
import re
from html import escape
from collections.abc import Callable

import numpy as np

from ..model.labels import is_inlined, is_kernel, is_unnamed
from ..model.profile import Profile
from .flametrie import Trie

WIDTH = 1200
FRAME_H = 16
PAD = 10
TOP = 34  # room for the title
MIN_PX = 0.5  # frames narrower than this are left out (their samples stay in their callers' width)
MAX_FRAMES = 6000  # bounds the file: about 1.5 MB at most
CHAR_PX = 6.6  # average glyph width of 11 px Verdana
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]")


def _text(value: str) -> str:
    """XML-safe text: markup escaped, characters XML 1.0 forbids replaced."""
    return escape(_CONTROL.sub("\ufffd", value), quote=True)


def _color(name: str) -> str:
    """FlameGraph's warm palette, from a hash of the name (stable across runs); kernel frames orange,
    unnamed code grey, spin loops (pause) red, inlined calls yellow-green."""
    h = hashlib.md5(name.encode("utf-8", "backslashreplace")).digest()
    a, b, c = h[0] / 255, h[1] / 255, h[2] / 255
    if name.endswith(" pause]"):
        return f"rgb({200 + int(55 * a)},{int(40 * b)},{int(40 * c)})"
    if is_kernel(name):
        return f"rgb({200 + int(55 * a)},{120 + int(60 * b)},{int(40 * c)})"
    if is_unnamed(name):
        grey = 160 + int(50 * a)
        return f"rgb({grey},{grey},{grey + 10})"
    if is_inlined(name):  # yellow-green: the user-code hue would hide it, blue is the kernel's here
        return f"rgb({150 + int(40 * a)},{190 + int(40 * b)},{60 + int(40 * c)})"
    return f"rgb({205 + int(50 * a)},{int(230 * b)},{int(55 * c)})"


def _layout(trie: Trie, total: int) -> list[tuple[int, float, float]]:
    """(node, x, width) in pixels for the widest frames, parents before children."""
    scale = (WIDTH - 2 * PAD) / total
    values = trie.values[0]
    # only these can be drawn (the widest of them are): a bound on the counts first, no float per node
    wide = np.flatnonzero(values >= MIN_PX / scale * (1 - 1e-9))
    wide = wide[values[wide] * scale >= MIN_PX]
    order = wide[np.lexsort((wide, trie.depths[wide], -values[wide]))[:MAX_FRAMES]]
    keep = np.sort(order).tolist()  # preorder: parents before children
    parents = trie.parents[keep].tolist()
    widths = (values[keep] * scale).tolist()
    x_of: dict[int, float] = {}
    cursor: dict[int, float] = {}
    out = []
    for i, parent, width in zip(keep, parents, widths):
        if parent >= 0 and parent not in x_of:
            continue
        start = cursor.get(parent, x_of.get(parent, float(PAD)))
        x_of[i] = start
        cursor[parent] = start + width
        out.append((i, start, width))
    return out


def flame_svg(profile: Profile, title: str = "Flame graph", trie: Trie | None = None) -> str:
    """The SVG document; the same profile gives the same bytes (``trie``: the profile's, if built already)."""
    trie = trie if trie is not None else Trie.of([profile.stacks])
    return trie_svg(
        trie, lambda i: _color(trie.frames[trie.frame[i]]), title, "samples", "the interactive view is report.html"
    )


def trie_svg(trie: Trie, color: Callable[[int], str], title: str, unit: str, note: str, standalone: bool = True) -> str:
    """A flame graph of a Trie's first column, ``color(node)`` its fill (asked only of the nodes drawn); ``unit`` names what a value counts
    ("samples", "µs"); ``standalone`` False gives an <svg> to inline in HTML (no XML-only attributes)."""
    total = trie.totals[0] if trie.totals else 0
    frames = _layout(trie, total) if total else []
    depth = max((int(trie.depths[i]) for i, _, _ in frames), default=0) + 1
    height = TOP + depth * FRAME_H + PAD + 14
    size = f'width="{WIDTH}" height="{height}" ' if standalone else 'width="100%" '
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" {size}'
        f'viewBox="0 0 {WIDTH} {height}" font-family="Verdana, sans-serif" font-size="11">',
        f'<rect width="{WIDTH}" height="{height}" fill="#fdfcf6"/>',
        f'<text x="{WIDTH // 2}" y="22" text-anchor="middle" font-size="16">{_text(title)}</text>',
    ]
    values = trie.values[0]
    for i, x, width in frames:
        name = trie.frames[trie.frame[i]]
        y = height - PAD - 14 - (int(trie.depths[i]) + 1) * FRAME_H
        share = 100.0 * values[i] / total
        out.append(
            f"<g><title>{_text(name)} ({values[i]:,} {unit}, {share:.2f}%)</title>"
            f'<rect x="{x:.1f}" y="{y}" width="{max(width - 0.5, 0.1):.1f}" height="{FRAME_H - 1}" '
            f'fill="{color(i)}" rx="2"/>'
        )
        chars = int((width - 6) / CHAR_PX)
        if chars >= 3:
            label = name if len(name) <= chars else name[: chars - 2] + ".."
            out.append(f'<text x="{x + 3:.1f}" y="{y + 11}">{_text(label)}</text>')
        out.append("</g>")
    text = (
        f"{total:,} {unit}; {len(frames):,} of {trie.size:,} frames drawn (narrower than {MIN_PX} px left out); {note}"
    )
    out.append(f'<text x="{PAD}" y="{height - 4}" font-size="10" fill="#555">{_text(text)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"

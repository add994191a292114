"""The placeholder grep: stand-ins for a missing value ('n/a', 'none', 'None', unfilled fields, empty
names) that must never reach a report's text (issue 22); shared by the rule and the live tests."""

from __future__ import annotations

import html
import re
from typing import Any
from collections.abc import Iterator

PLACEHOLDER = re.compile(
    r"\bn/a\b|\bN/A\b|\bNone\b|\bnan\b|(?<!/dev/)\bnull\b"  # stand-ins for a missing value
    r"|\bthe none\b|[=:(]\s*none\s*([).,;]|$)|\(none\b|\bnone\s*\)"  # 'none' where a name or a number belongs
    r"|\{[a-z_.]+(:[^}]*)?\}"  # a template field left unfilled
    r"|[:=]\s*\?(?=[\s,)]|$)|\w \?(?=[\s,)]|$)"  # '?' for a value ('Host: ?, kernel ?')
    r"|(?<!`)``(?!`)|\s\(\s*\)|\bthe\s{2,}\w|\w\s{2,}finding\b",  # an empty name
)
# 'none' is a real value of these settings, and what they are set to
ALLOWED = re.compile(r"innodb_change_buffering\s*=\s*'?none'?|thread_handling\s*=\s*none|= ?'none'", re.I)


def visible(page: str) -> str:
    """The HTML's text: without script, style and tags, entities decoded."""
    page = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S | re.I)
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def placeholders(text: str) -> list[str]:
    text = ALLOWED.sub("", text)
    return [text[max(0, m.start() - 50) : m.end() + 30].replace("\n", " ") for m in PLACEHOLDER.finditer(text)]


def finding_texts(doc: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """Each text field of each finding of findings.json, and each string of its evidence."""
    for f in doc["findings"]:
        for key in ("title", "message"):
            yield f"{f['rule']}.{key}", f[key]
        fix = f["fix"]  # format 3: typed steps; 2: one text
        yield from (
            ((f"{f['rule']}.fix", s["text"]) for s in fix) if isinstance(fix, list) else [(f"{f['rule']}.fix", fix)]
        )
        for key in ("next_steps", "missing", "chain"):
            yield from ((f"{f['rule']}.{key}", t) for t in f[key])
        conf = f.get("confidence") or {}
        yield from (
            (f"{f['rule']}.confidence", t)
            for t in conf.get("confirmed", []) + conf.get("not_confirmed", []) + conf.get("refuted", [])
        )
        yield from _strings(f"{f['rule']}.evidence", f["evidence"])


def _strings(where: str, value: Any) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(f"{where}.{k}", v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(where, v)

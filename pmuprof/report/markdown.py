"""report.md: short ticket text (top findings with fixes, key numbers, how it was captured)."""

from __future__ import annotations

import re
from typing import Any

from ..findings.model import ConfidenceJSON
from ..findings.steps import FENCE_LANG, FixStepJSON, fence
from ..model.threadtables import ThreadTables
from . import bidi
from .cards import Words, report_cards
from .payload import ReportPayload
from .rows import GroupRow, LatchRow, ShownFinding
from .servercounters import ServerCounters
from .summaryrows import Verdict
from .verdict import busy_sentence, margin_text, server_checks
from .wallclock import NO_USER_STACK


def _code(text: str) -> str:
    """A fenced block that the text itself cannot close."""
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}\n{text.rstrip()}\n{fence}"


def _inline(text: Any) -> str:
    """Inline code span safe for any symbol name (backticks, pipes, angle brackets)."""
    value = str(text).replace("\n", " ").replace("|", "\\|")
    ticks = "`"
    while ticks in value:
        ticks += "`"
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{ticks}{pad}{value}{pad}{ticks}"


_ENTITY = re.compile(r"&(?=#?[0-9A-Za-z]+;)")
_QUOTE = re.compile(r"^(\s*)>", re.M)


def _text(text: Any) -> str:
    """Plain text that a Markdown renderer with raw HTML cannot turn into markup, still readable as text.

    Every '<' could open a tag and an '&' before 'name;' is an entity: both escaped. A '>' only
    quotes at the start of a line, so 'srv_sys->mutex' stays as it is.
    """
    return _QUOTE.sub(r"\1\\>", _ENTITY.sub("&amp;", str(text)).replace("<", "&lt;"))


def _confidence(f: ShownFinding) -> str:
    c: ConfidenceJSON = f["confidence"]
    if not c:
        return ""
    parts = [f"how sure: {c.get('level')}"]
    if c.get("samples") is not None:
        parts.append(f"{c['samples']:,} of {c.get('total') or 0:,} samples")
    elif c.get("blocked_s") is not None:
        parts.append(f"{c['blocked_s']:,} s blocked")
    if c.get("margin") is not None:
        parts.append(margin_text(c, "x"))
    parts += [_text(text) for _, text in server_checks(c)]
    return "(" + "; ".join(parts) + ")"


def _finding(f: ShownFinding, level: str = "###") -> list[str]:
    lines = [
        f"{level} [{f['severity'].upper()}] {_text(f['title'])} ({100 * f['share']:.1f} % of {f['confidence'].get('basis') or 'samples'})"
    ]
    if _confidence(f):
        lines.append(_confidence(f))
    if f["chain"]:
        lines.append("Frames: " + " ← ".join(_inline(c) for c in f["chain"]))
    if f["message"]:
        lines += ["", _text(f["message"].strip())]
    if f["fix"]:
        lines += ["", "Fix:"] + _fix(f["fix"])
    return lines + [""]


def _fix(steps: list[FixStepJSON]) -> list[str]:
    """The fix steps apart: each variant's servers once before its steps, code in a fenced block of its
    language (```sql, ```ini, ```sh), notes as paragraphs."""
    lines: list[str] = []
    servers = ""
    for step in steps:
        if step["applies_to"] != servers:
            servers = step["applies_to"]
            lines += ["", f"*{_text(servers) or 'Any server'}:*"]
        text = step["text"]
        lines += ["", fence(text, FENCE_LANG[step["kind"]]) if step["kind"] in FENCE_LANG else _text(text.strip())]
    return lines


def _findings(groups: list[GroupRow]) -> list[str]:
    """Every finding: each cause with its fix, then the findings it explains (fix the cause first)."""
    if not groups:
        return ["No rule fired. See the flame graph in report.html for where the time went.", ""]
    lines = []
    for g in groups:
        lines += _finding(g["cause"])
        for f in g["consequences"]:
            lines += [
                f"- explained by the finding above: [{f['severity'].upper()}] {_text(f['title'])} "
                f"({100 * f['share']:.1f} %): {_text(f['message'].strip())}"
            ]
        if g["consequences"]:
            lines.append("")
    return lines


def _latches(rows: list[LatchRow], top: int = 8) -> list[str]:
    if not rows:
        return []
    lines = ["### Spin and waits by latch", "", "| latch | share | how | from |", "|---|---|---|---|"]
    for r in rows[:top]:
        how = ", ".join(f"{k} {n}" for k, n in r["kinds"].items())
        chain = _inline(r["chains"][0]["text"]) if r["chains"] else ""
        lines.append(f"| {_text(r['name'])} | {100 * r['share']:.1f} % | {how} | {chain} |")
    return lines + [""]


def _wall(p: ReportPayload, top: int = 8) -> list[str]:
    """Wall clock by state, and the largest thread groups of the last snapshot (threads.json)."""
    wall, snaps = p.wall, p.offcpu_threads
    if not wall:
        return []
    lines = ["### Wall clock (on-CPU and off-CPU)", "", "| process | state | seconds | share |", "|---|---|---:|---:|"]
    lines += [
        f"| {_inline(r['process'])} | {r['state']} | {r['seconds']:,} | {100 * r['share']:.1f} % |" for r in wall.states
    ]
    lines += (["", _text(wall.note)] if wall.note else []) + [""]
    for s in [s for s in snaps if s["groups"]][-1:]:  # the last snapshot that found threads
        lines += [
            f"What the threads were doing at the capture's {s['when']} ({_text(s['label'])}, {s['threads']} threads), "
            "innermost frame first:",
            "",
            "| threads | state | stack |",
            "|---:|---|---|",
        ]
        lines += [
            f"| {g['count']} | {g['state']} | {_inline(g['kernel'] or g['wchan'] if g['stack'] == NO_USER_STACK else g['stack'])} |"
            for g in s["groups"][:top]
        ]
        lines.append("")
    return lines


def _items(lines: tuple[Words, ...]) -> list[str]:
    """Lines of words (report/cards.py) as list items: names and commands as code, the rest as text."""
    return ["- " + "".join(_inline(w.text) if w.kind == "code" else _text(w.text) for w in line) for line in lines]


def _verdict(v: Verdict, samples: int) -> list[str]:
    """The report's first screen in two lines: the top cause and how sure, or that nothing is wrong; first, when the
    server was mostly off the CPU and off-CPU time was not recorded, that note and the command to record it."""
    w = v["waiting"]
    note = [f"**Mostly off the CPU:** {_text(w['sentence'])} `{w['command']}`", ""] if w else []
    if v["healthy"] is True:
        busy = busy_sentence(v["busy"], _inline)
        busy = f" {busy[0].upper() + busy[1:]}." if busy else ""
        if w:
            return note + [
                f"**Verdict: no known problem in the on-CPU samples** ({samples:,}): the waits are not in them.{busy}",
                "",
            ]
        n = len(v["info"])
        info = f" ({n} informational finding{'s' if n > 1 else ''} below)" if n else ""
        return [f"**Verdict: no known problem found** in {samples:,} samples{info}.{busy}", ""]
    c = v["confidence"]
    sure = "; ".join(x for x in (c.get("level"), c.get("samples"), c.get("margin")) if x)
    also = f" It also explains: {', '.join(e['rule'] for e in v['explains'])}." if v["explains"] else ""
    basis = v["basis"] or "samples"
    whose = "" if basis.startswith("the ") else f"{v['process'] or 'the'} "  # "the host's time" is no process's
    return note + [
        f"**Verdict: {_text(v['title'])}** — {100 * v['share']:.1f} % of {_text(whose)}{basis}"
        f"{' (how sure: ' + _text(sure) + ')' if sure else ''}.{' In ' + _text(v['who']) + '.' if v.get('who') else ''} "
        f"{_text(v['sentence'])}{also} The fix is under "
        f"the first finding below.",
        "",
    ]


def _polls(th: ThreadTables) -> str:
    """ " (15 polls in 20 s: fewer than one a second)", or the count alone."""
    polls, secs = th.get("polls", 0), th.get("seconds", 0)
    if not secs:
        return f" ({polls:,} polls)"
    slow = ": fewer than one a second, some samples joined a neighbouring second or none" if polls < 0.9 * secs else ""
    return f" ({polls:,} polls in {secs:,} s{slow})"


def _threads(th: ThreadTables | None, top: int = 5) -> list[str]:
    """CPU by processlist state and by statement (the sentence of each busy group), when joined; else by thread."""
    if not th:
        return []
    names: tuple[str, ...]
    if th["polled"]:
        names = ("state", "statement")
        lines = [
            "### CPU by processlist state and statement",
            "",
            f"{th['joined']:,} of {th['samples']:,} samples joined to their thread's processlist row in that second"
            f"{_polls(th)}.",
            "",
        ]
    else:
        names = ("thread",)
        lines = [
            "### CPU by thread",
            "",
            f"{th['samples']:,} samples with their thread id; no processlist was polled "
            "during this capture, so only the split by thread is shown.",
            "",
        ]
    for table in th["tables"]:
        if table["name"] not in names:
            continue
        lines += [f"| {table['name']} | share | function | in group |", "|---|---:|---|---:|"]
        for r in table["rows"][:top]:
            fn = _inline(r["function"]) if r["function"] else ""
            share = f"{100 * r['function_share']:.0f} %" if r["function"] else ""
            lines.append(f"| {_inline(r['key'][:100])} | {100 * r['share']:.1f} % | {fn} | {share} |")
        lines.append("")
    return lines


def _server_counters(sc: ServerCounters | None) -> list[str]:
    """status.json's key counters over the window and InnoDB at both ends (nothing without the file)."""
    if not sc:
        return []
    lines = [
        "### Server counters",
        "",
        f"{sc['polls']} reads of the server's status over {sc['seconds']} s (median {sc['read_ms']['median']} ms "
        "each); pmuprof's own statements taken out.",
        "",
        "| counter | over the window | busiest second / highest | first → last | per second |",
        "|---|---:|---:|---:|---|",
    ]
    for r in sc["rows"]:
        value = f"{r['value']:,.2f} {r['unit']}" + (" on average" if r["level"] else "")
        ends = f"{r['first']:,.0f} → {r['last']:,.0f}" if r["level"] and r["first"] is not None else ""
        peak = f"{r['peak']:,.2f}" if r["peak"] is not None else ""
        lines.append(f"| `{r['name']}` | {value} | {peak} | {ends} | {r['bars']} |")
    if sc["idle"]:
        lines.append("")
        lines.append("Did not move: " + ", ".join(f"`{n}`" for n in sc["idle"]) + ".")
    for st in sc["innodb"]:
        said = [f"history list length {st['history_length']:,}"] if st["history_length"] is not None else []
        said += [f"{st['transactions']} transactions"] if st["transactions"] is not None else []
        said += [f"{st['lock_waits']} waiting for a lock"] if st["lock_waits"] else []
        lines += ["", f"- InnoDB at the {st['when']}: " + ", ".join(said)]
        if st["oldest"]:
            lines.append(f"  - oldest transaction: {_text(st['oldest'])}")
        if st["oldest_view"] and st["oldest_view"] != st["oldest"]:
            lines.append(f"  - oldest read view: {_text(st['oldest_view'])}")
        lines += [f"  - waiting: {_text(w)}" for w in st["waiting"][:3]]
    return lines + [""]


def render_markdown(payload: ReportPayload) -> str:
    """The ticket text for a report payload."""
    lines = [f"## {_text(payload.title)}", ""] + _verdict(payload.verdict, payload.summary["samples"])
    lines += ["### Findings", ""]
    lines += _findings(payload.groups)
    lines += _latches(payload.latches)
    lines += _wall(payload)
    lines += _threads(payload.threads)
    lines += _server_counters(payload.server_counters)
    cards = report_cards(payload)
    lines += ["### Key numbers", ""] + _items(cards.numbers) + [""]
    lines += ["### How it was captured", ""] + _items(cards.captured) + [""]
    lines += [
        "![Flame graph](flame.svg)",
        "",
        "Full report: report.html (self-contained, opens offline); flame graph picture: [flame.svg](flame.svg); "
        "machine-readable: findings.json.",
    ]
    return bidi.visible("\n".join(lines) + "\n")

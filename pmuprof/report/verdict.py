"""The report's first screen: the top cause in one sentence, how sure, its fix, and the host caveats as a chip."""

from __future__ import annotations

import re
from typing import Any, Collection, Mapping
from urllib.parse import quote

from .evidence import pct

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(`])")
_REGEX_SPECIAL = re.compile(r"[.*+?^${}()|\[\]\\]")  # what the page's pmuEscapeRegex escapes


def hash_value(text: str) -> str:
    """A value as the page's encodeURIComponent writes it into the URL hash."""
    return quote(text, safe="-_.!~*'()")


def flame_link(frame: str) -> str:
    """The hash that opens the flame graph on one function: its sandwich, the function highlighted."""
    search = "^" + _REGEX_SPECIAL.sub(lambda m: "\\" + m.group(0), frame) + "$"
    return f"#view=sandwich&focus={hash_value(frame)}&search={hash_value(search)}"


def sentence(finding: Mapping[str, Any]) -> str:
    """The first sentence of the message after its leading call chain ('chain — what happens.')."""
    message = " ".join(str(finding.get("message") or "").split())
    head, dash, rest = message.partition(" — ")
    if dash and (not finding.get("chain") or str(finding["chain"][0]) in head):
        message = rest
    first = _SENTENCE_END.split(message, maxsplit=1)[0].strip() if message else ""
    if not first:
        return f"{finding['title']}: {pct(float(finding['share']))} of the samples."
    return first[0].upper() + first[1:]


def cause_frame(finding: Mapping[str, Any], frames: Collection[str]) -> str:
    """The first frame of the finding's chain that the flame graph has ('' when none: not a stack finding)."""
    return next((str(f) for f in finding.get("chain") or () if f in frames), "")


def confidence_parts(conf: Mapping[str, Any]) -> dict[str, Any]:
    """How sure, in words: the level, samples behind it, margin over the threshold, corroboration seen or not."""
    if not conf:
        return {}
    samples = conf.get("samples")
    margin, threshold = conf.get("margin"), conf.get("threshold")
    bound = (f" ({threshold:g} threads blocked on average)" if conf.get("unit") == "threads" else f" ({pct(threshold)})") \
        if isinstance(threshold, (int, float)) else ""
    blocked = f"{conf['blocked_s']:,} s blocked" if conf.get("blocked_s") is not None else ""
    return {
        "level": str(conf.get("level") or "not rated"),
        "samples": f"{samples:,} of {conf.get('total') or 0:,} samples" if samples is not None else blocked,
        "margin": f"{margin}× its threshold{bound}" if margin is not None else "",
        "seen": list(conf.get("corroborated") or []),
        "not_seen": list(conf.get("not_corroborated") or []),
    }


def caveats(summary: Mapping[str, Any]) -> dict[str, Any]:
    """Host and capture caveats: short tags for the chip, the full lines behind it."""
    tags, lines = [], []
    if summary.get("interrupted"):
        tags.append("capture interrupted")
        lines.append("The capture was interrupted: the report covers what was captured before that.")
    if summary.get("event_substituted"):
        tags.append(f"{summary['event_recorded']}, not {summary['event_requested']}")
    elif summary.get("host", {}).get("hardware_pmu") is False:
        tags.append("no hardware PMU")
    lines += [str(w) for w in summary.get("warnings") or []]
    for f in summary.get("features_off") or []:
        tags.append(f"off: {f.get('feature')}")
        lines.append(f"Off: {f.get('feature')}" + (f" — {f['why']}" if f.get("why") else "")
                     + (f" (fix: {f['fix']})" if f.get("fix") else ""))
    if lines and not tags:
        tags.append(f"{len(lines)} warning{'s' if len(lines) > 1 else ''}")
    return {"tags": list(dict.fromkeys(tags)), "lines": lines}


def _healthy(findings: list[Mapping[str, Any]], top_rows: list[Mapping[str, Any]],
             frames: Collection[str]) -> dict[str, Any]:
    """No finding above info: say so, with the informational ones and where the time went."""
    hottest = next((r for r in top_rows if r.get("self")), None)
    info = [{"rule": f["rule"], "title": f["title"], "share": float(f["share"])} for f in findings]
    out: dict[str, Any] = {"healthy": True, "info": info, "hottest": "", "hottest_share": 0.0, "link": ""}
    if hottest is not None:
        out.update(hottest=hottest["name"], hottest_share=float(hottest["self_share"]),
                   link=flame_link(hottest["name"]) if hottest["name"] in frames else "")
    return out


def verdict(findings: list[Mapping[str, Any]], top: Mapping[str, Any] | None, summary: Mapping[str, Any],
            top_rows: list[Mapping[str, Any]], frames: Collection[str]) -> dict[str, Any]:
    """What the first screen says: the diagnosis's top cause (``top``: its group, as shown), or 'healthy'
    when there is none (no finding above info)."""
    out: dict[str, Any] = {"caveats": caveats(summary), "findings": len(findings)}
    if top is None:
        return {**out, **_healthy(findings, top_rows, frames)}
    cause = top["cause"]
    frame = cause_frame(cause, frames)
    explained = [{"rule": f["rule"], "title": f["title"]} for f in top["consequences"]]
    return {**out, "healthy": False, "rule": cause["rule"], "severity": cause["severity"], "title": cause["title"],
            "share": float(cause["share"]), "process": cause.get("process") or "", "sentence": sentence(cause),
            "basis": (cause.get("confidence") or {}).get("basis") or "samples",
            "confidence": confidence_parts(cause.get("confidence") or {}), "fix": list(cause.get("fix") or []),
            "server": str(summary.get("server_version") or ""), "explains": explained,
            "more": len(findings) - 1, "frame": frame, "link": flame_link(frame) if frame else ""}

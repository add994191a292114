"""The report's first screen: the top cause in one sentence, how sure, its fix, and the host caveats as a chip."""

from __future__ import annotations

import re
from typing import Any
from collections.abc import Callable, Collection, Mapping
from urllib.parse import quote

from ..model.labels import without_kernel_suffix
from .evidence import pct
from .noise import wilson

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
    bound = (
        (f" ({threshold:g} threads blocked on average)" if conf.get("unit") == "threads" else f" ({pct(threshold)})")
        if isinstance(threshold, (int, float))
        else ""
    )
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
        lines.append(
            f"Off: {f.get('feature')}"
            + (f" — {f['why']}" if f.get("why") else "")
            + (f" (fix: {f['fix']})" if f.get("fix") else "")
        )
    if lines and not tags:
        tags.append(f"{len(lines)} warning{'s' if len(lines) > 1 else ''}")
    return {"tags": list(dict.fromkeys(tags)), "lines": lines}


def share_text(count: int, total: int, what: str = "") -> str:
    """'23.6 % inclusive, ±1.3 points': a share with its 95 % sampling noise (Wilson), as the diff words it."""
    if not total:
        return ""
    low, high = wilson(count, total)
    return f"{100 * count / total:.1f} %{' ' + what if what else ''}, ±{100 * (high - low) / 2:.1f} points"


_BUSY_KEYS = (
    "function",
    "share",
    "link",
    "path_end",
    "path_share",
    "leaf",
    "leaf_kind",
    "leaf_share",
    "leaf_entry",
    "leaf_under",
    "leaf_via",
    "state",
    "state_share",
    "state_function",
)


def busy(b: Mapping[str, Any] | None, frames: Collection[str]) -> dict[str, Any]:
    """The healthy verdict's facts in words (findings/busiest.py ``Busiest``): names without their ``_[k]``
    / ``_[i]`` tags, shares with their noise, the flame-graph link of the busiest function."""
    if not b or not b.get("total"):
        return {}
    total = int(b["total"])
    name = lambda key: without_kernel_suffix(str(b.get(key) or ""))  # noqa: E731
    out: dict[str, Any] = dict.fromkeys(_BUSY_KEYS, "")
    if b.get("function"):
        out.update(
            function=name("function"),
            share=share_text(int(b["samples"]), total, "inclusive"),
            link=flame_link(b["function"]) if b["function"] in frames else "",
        )
        if b.get("path_end"):
            out.update(path_end=name("path_end"), path_share=share_text(int(b["path_end_samples"]), total))
    if b.get("leaf"):
        out.update(
            leaf=name("leaf"),
            leaf_kind=str(b.get("leaf_kind") or ""),
            leaf_share=share_text(int(b["leaf_samples"]), total, "self"),
            leaf_entry=name("leaf_entry"),
            leaf_under=name("leaf_under"),
            leaf_via=name("leaf_via"),
        )
    if not out["function"] and not out["leaf"] and not b.get("state"):
        return {}
    if b.get("state"):
        out.update(
            state=str(b["state"]),
            state_share=f"{100 * float(b.get('state_share') or 0):.1f} %",
            state_function=name("state_function"),
        )
    return out


def busy_sentence(words: Mapping[str, Any], q: Callable[[str], str] = lambda n: f"`{n}`") -> str:
    """The healthy verdict's one fact as plain text (markdown, the one-line verdict): ``q`` quotes names."""
    parts = []
    if words.get("function"):
        path = f" → … → {q(words['path_end'])} ({words['path_share']})" if words.get("path_end") else ""
        parts.append(f"most time in {q(words['function'])} ({words['share']}){path}")
    if words.get("leaf"):
        kind = words["leaf_kind"]
        what = f"{kind} work {q(words['leaf'])}" if kind == "kernel" else f"{kind} code {q(words['leaf'])}"
        entry = f" in {q(words['leaf_entry'])}" if words.get("leaf_entry") else ""
        under = (
            f" under {q(words['leaf_under'])}"
            if words.get("leaf_under")
            else f" called from {q(words['leaf_via'])} (no server function on those stacks)"
            if words.get("leaf_via")
            else ""
        )
        parts.append(f"the most self time is {what}{entry} ({words['leaf_share']}){under}")
    if words.get("state"):
        fn = f", mostly in {q(words['state_function'])}" if words.get("state_function") else ""
        parts.append(
            f"the busiest processlist state is {q(words['state'])} ({words['state_share']} of the samples{fn})"
        )
    return "; ".join(parts)


def _healthy(
    findings: list[Mapping[str, Any]],
    top_rows: list[Mapping[str, Any]],
    frames: Collection[str],
    busiest: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """No finding above info: say so, with the informational ones and where the time went (the busiest server
    function, what the hottest self frame is and runs under, the busiest processlist state)."""
    hottest = next((r for r in top_rows if r.get("self")), None)
    info = [{"rule": f["rule"], "title": f["title"], "share": float(f["share"])} for f in findings]
    out: dict[str, Any] = {"healthy": True, "info": info, "hottest": "", "hottest_share": 0.0, "link": ""}
    if hottest is not None:
        out.update(
            hottest=hottest["name"],
            hottest_share=float(hottest["self_share"]),
            link=flame_link(hottest["name"]) if hottest["name"] in frames else "",
        )
    words = busy(busiest, frames)
    out["busy"] = {**words, "sentence": busy_sentence(words)} if words else {}
    return out


def verdict(
    findings: list[Mapping[str, Any]],
    top: Mapping[str, Any] | None,
    summary: Mapping[str, Any],
    top_rows: list[Mapping[str, Any]],
    frames: Collection[str],
    busiest: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """What the first screen says: the diagnosis's top cause (``top``: its group, as shown), or 'healthy'
    when there is none (no finding above info), with ``busiest`` (the Diagnosis's, as a dict) in words."""
    out: dict[str, Any] = {"caveats": caveats(summary), "findings": len(findings)}
    if top is None:
        return {**out, **_healthy(findings, top_rows, frames, busiest)}
    cause = top["cause"]
    frame = cause_frame(cause, frames)
    explained = [{"rule": f["rule"], "title": f["title"]} for f in top["consequences"]]
    return {
        **out,
        "healthy": False,
        "rule": cause["rule"],
        "severity": cause["severity"],
        "title": cause["title"],
        "share": float(cause["share"]),
        "process": cause.get("process") or "",
        "sentence": sentence(cause),
        "basis": (cause.get("confidence") or {}).get("basis") or "samples",
        "confidence": confidence_parts(cause.get("confidence") or {}),
        "fix": list(cause.get("fix") or []),
        "server": str(summary.get("server_version") or ""),
        "explains": explained,
        "more": len(findings) - 1,
        "frame": frame,
        "link": flame_link(frame) if frame else "",
    }

"""The report's first screen: the top cause in one sentence, how sure, its fix, and the host caveats as a chip."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from urllib.parse import quote

from ..findings.busiest import Busiest
from ..findings.model import ConfidenceJSON
from ..model.labels import without_kernel_suffix
from .evidence import pct
from .noise import wilson
from .rows import Check, GroupRow, ShownFinding, TopRow
from .summaryrows import (
    BusyWords,
    Caveats,
    CauseVerdict,
    ConfidenceWords,
    HealthyVerdict,
    InfoRow,
    RuleTitle,
    Summary,
    Verdict,
    WaitingRow,
)

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(`])")
_REGEX_SPECIAL = re.compile(r"[.*+?^${}()|\[\]\\]")  # what the page's pmuEscapeRegex escapes


def hash_value(text: str) -> str:
    """A value as the page's encodeURIComponent writes it into the URL hash."""
    return quote(text, safe="-_.!~*'()")


def flame_link(frame: str) -> str:
    """The hash that opens the flame graph on one function: its sandwich, the function highlighted."""
    search = "^" + _REGEX_SPECIAL.sub(lambda m: "\\" + m.group(0), frame) + "$"
    return f"#view=sandwich&focus={hash_value(frame)}&search={hash_value(search)}"


def sentence(finding: ShownFinding) -> str:
    """The first sentence of the message after its leading call chain ('chain — what happens.')."""
    message = " ".join(finding["message"].split())
    head, dash, rest = message.partition(" — ")
    if dash and (not finding["chain"] or finding["chain"][0] in head):
        message = rest
    first = _SENTENCE_END.split(message, maxsplit=1)[0].strip() if message else ""
    if not first:
        return f"{finding['title']}: {pct(finding['share'])} of the samples."
    return first[0].upper() + first[1:]


def cause_frame(finding: ShownFinding, frames: Collection[str]) -> str:
    """The first frame of the finding's chain that the flame graph has ('' when none: not a stack finding)."""
    return next((f for f in finding["chain"] if f in frames), "")


def server_checks(conf: ConfidenceJSON) -> list[tuple[str, str]]:
    """What the server's facts said of a finding, as (kind, words): ``seen`` confirmed by, ``missing`` not
    confirmed / not in this input, ``refuted`` set aside by; ``decided`` for a rule no server fact bears on.
    One wording for the HTML card, the verdict and report.md."""
    out = [("seen", f"confirmed by the server: {x}") for x in conf.get("confirmed") or []]
    out += [("refuted", f"refuted by the server: {x}") for x in conf.get("refuted") or []]
    out += [("missing", f"not confirmed: {x}") for x in conf.get("not_confirmed") or []]
    would = conf.get("would_decide") or []
    if would:
        out.append(("missing", "not in this input, and would decide it: " + "; ".join(str(w) for w in would)))
    if conf.get("decided_by"):
        out.append(("decided", f"decided by {conf.get('decided_by')}"))
    return out


def checks(conf: ConfidenceJSON) -> list[Check]:
    """``server_checks`` as the report's rows."""
    return [Check(kind=k, text=t) for k, t in server_checks(conf)]


def confidence_parts(conf: ConfidenceJSON) -> ConfidenceWords:
    """How sure, in words: the level, samples behind it, margin over the threshold, what the server's facts said."""
    if not conf:
        return {}
    samples = conf.get("samples")
    margin = conf.get("margin")
    blocked_s = conf.get("blocked_s")
    blocked = f"{blocked_s:,} s blocked" if blocked_s is not None else ""
    return ConfidenceWords(
        level=conf.get("level") or "not rated",
        samples=f"{samples:,} of {conf.get('total') or 0:,} samples" if samples is not None else blocked,
        margin=margin_text(conf) if margin is not None else "",
        checks=checks(conf),
    )


def margin_text(conf: ConfidenceJSON, times: str = "×") -> str:
    """'6.83 threads blocked on average, 3.42× its threshold of 2': the measurement first, the rule's threshold
    named as one (a threshold in parentheses beside a margin read as the measurement)."""
    margin, threshold, value = conf.get("margin"), conf.get("threshold"), conf.get("value")
    threads = conf.get("unit") == "threads"
    measured = f"{value:.2f} threads blocked on average, " if threads and value is not None else ""
    if threshold is None:
        return f"{measured}{margin}{times} its threshold"
    bound = (
        f"{threshold:g} threads blocked on average"
        if threads and not measured
        else (f"{threshold:g}" if threads else pct(threshold))
    )
    return f"{measured}{margin}{times} its threshold of {bound}"


def caveats(summary: Summary) -> Caveats:
    """Host and capture caveats: short tags for the chip, the full lines behind it."""
    tags, lines = [], []
    if summary["interrupted"]:
        tags.append("capture interrupted")
        lines.append("The capture was interrupted: the report covers what was captured before that.")
    if summary["event_substituted"]:
        tags.append(f"{summary['event_recorded']}, not {summary['event_requested']}")
    elif summary["host"]["hardware_pmu"] is False:
        tags.append("no hardware PMU")
    lines += summary["warnings"]
    for f in summary["features_off"]:
        tags.append(f"off: {f['feature']}")
        lines.append(
            f"Off: {f['feature']}"
            + (f" — {f['why']}" if f["why"] else "")
            + (f" (fix: {f['fix']})" if f["fix"] else "")
        )
    if lines and not tags:
        tags.append(f"{len(lines)} warning{'s' if len(lines) > 1 else ''}")
    return Caveats(tags=list(dict.fromkeys(tags)), lines=lines)


def share_text(count: int, total: int, what: str = "") -> str:
    """'23.6 % inclusive, ±1.3 points': a share with its 95 % sampling noise (Wilson), as the diff words it."""
    if not total:
        return ""
    low, high = wilson(count, total)
    return f"{100 * count / total:.1f} %{' ' + what if what else ''}, ±{100 * (high - low) / 2:.1f} points"


def busy(b: Busiest | None, frames: Collection[str]) -> BusyWords:
    """The healthy verdict's facts in words (findings/busiest.py ``Busiest``): names without their ``_[k]``
    / ``_[i]`` tags, shares with their noise, the flame-graph link of the busiest function."""
    if b is None or not b.total:
        return {}
    name = without_kernel_suffix
    function, path, leaf = name(b.function), bool(b.function and b.path_end), bool(b.leaf)
    if not function and not (leaf and name(b.leaf)) and not b.state:
        return {}
    return BusyWords(
        function=function,
        share=share_text(b.samples, b.total, "inclusive") if b.function else "",
        link=flame_link(b.function) if b.function and b.function in frames else "",
        path_end=name(b.path_end) if path else "",
        path_share=share_text(b.path_end_samples, b.total) if path else "",
        leaf=name(b.leaf),
        leaf_kind=b.leaf_kind if leaf else "",
        leaf_share=share_text(b.leaf_samples, b.total, "self") if leaf else "",
        leaf_entry=name(b.leaf_entry) if leaf else "",
        leaf_under=name(b.leaf_under) if leaf else "",
        leaf_via=name(b.leaf_via) if leaf else "",
        state=b.state,
        state_share=f"{100 * b.state_share:.1f} %" if b.state else "",
        state_function=name(b.state_function) if b.state else "",
    )


def busy_sentence(words: BusyWords, q: Callable[[str], str] = lambda n: f"`{n}`") -> str:
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
    findings: list[ShownFinding], top_rows: list[TopRow], frames: Collection[str], busiest: Busiest | None
) -> tuple[list[InfoRow], str, float, str, BusyWords]:
    """No finding above info: the informational ones and where the time went (the busiest server function,
    what the hottest self frame is and runs under, the busiest processlist state)."""
    hottest = next((r for r in top_rows if r["self"]), None)
    info = [InfoRow(rule=f["rule"], title=f["title"], share=f["share"]) for f in findings]
    name, share, link = "", 0.0, ""
    if hottest is not None:
        name, share = hottest["name"], hottest["self_share"]
        link = flame_link(name) if name in frames else ""
    words = busy(busiest, frames)
    return info, name, share, link, (BusyWords(**words, sentence=busy_sentence(words)) if words else {})


def verdict(
    findings: list[ShownFinding],
    top: GroupRow | None,
    summary: Summary,
    top_rows: list[TopRow],
    frames: Collection[str],
    busiest: Busiest | None = None,
    waiting: WaitingRow | None = None,
    who: str = "",
    server: str | None = None,
) -> Verdict:
    """What the first screen says: the diagnosis's top cause (``top``: its group, as shown), or 'healthy'
    when there is none (no finding above info), with ``busiest`` (the Diagnosis's) in words. ``who``: the
    cause's process in words (report/who.py); ``server``: its server's version when it is not the summary's
    (one of several processes)."""
    if top is None:
        info, hottest, hottest_share, link, words = _healthy(findings, top_rows, frames, busiest)
        return HealthyVerdict(
            caveats=caveats(summary),
            findings=len(findings),
            healthy=True,
            info=info,
            hottest=hottest,
            hottest_share=hottest_share,
            link=link,
            busy=words,
            waiting=waiting,
        )
    cause = top["cause"]
    frame = cause_frame(cause, frames)
    return CauseVerdict(
        caveats=caveats(summary),
        findings=len(findings),
        healthy=False,
        rule=cause["rule"],
        severity=cause["severity"],
        title=cause["title"],
        share=cause["share"],
        process=cause["process"],
        sentence=sentence(cause),
        basis=cause["confidence"].get("basis") or "samples",
        confidence=confidence_parts(cause["confidence"]),
        fix=list(cause["fix"]),
        server=summary["server_version"] if server is None else server,
        who=who,
        explains=[RuleTitle(rule=f["rule"], title=f["title"]) for f in top["consequences"]],
        more=len(findings) - 1,
        frame=frame,
        link=flame_link(frame) if frame else "",
        waiting=waiting,
    )

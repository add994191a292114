"""report.md: short ticket text (top findings with fixes, key numbers, how it was captured)."""

from __future__ import annotations

from typing import Any, Mapping

TOP_FINDINGS = 3
TOP_FRAMES = 8


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


def _text(text: Any) -> str:
    """Plain text that a Markdown renderer with raw HTML cannot turn into markup."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _findings(findings: list[Mapping[str, Any]]) -> list[str]:
    if not findings:
        return ["No rule fired. See the flame graph in report.html for where the time went.", ""]
    lines = []
    for f in findings[:TOP_FINDINGS]:
        lines.append(f"### [{str(f['severity']).upper()}] {_text(f['title'])} ({100 * f['share']:.1f} % of samples)")
        if f.get("chain"):
            lines.append("Frames: " + " ← ".join(_inline(c) for c in f["chain"]))
        if f.get("message"):
            lines.append("")
            lines.append(_text(str(f["message"]).strip()))
        if f.get("fix"):
            lines += ["", "Fix:", _code(str(f["fix"]))]
        lines.append("")
    if len(findings) > TOP_FINDINGS:
        lines += [f"…and {len(findings) - TOP_FINDINGS} more in findings.json.", ""]
    return lines


def _numbers(p: Mapping[str, Any]) -> list[str]:
    s = p["summary"]
    out = [f"- Samples: {s['samples']:,}" + (f" of {s['event_recorded']}" if s["event_recorded"] else "")
           + (f" (asked for {s['event_requested']})" if s["event_substituted"] else "")]
    if s.get("duration_s") is not None:
        out.append(f"- Duration: {s['duration_s']} s" + (", interrupted" if s["interrupted"] else ""))
    for proc, ipc in p["counters"]["ipc"].items():
        out.append(f"- IPC{' of ' + _inline(proc) if proc else ''}: {ipc}")
    rows = p["top_functions"][0]["rows"][:TOP_FRAMES]
    if rows:
        out.append("- Hottest functions (self): " + ", ".join(
            f"{_inline(r['name'])} {100 * r['self_share']:.1f} %" for r in rows if r["self"]))
    return out


def _capture(p: Mapping[str, Any]) -> list[str]:
    s = p["summary"]
    host = s["host"]
    out = []
    if s["processes"]:
        out.append("- Target: " + ", ".join(_inline(x) for x in s["processes"])
                   + (f" ({s['server_version']})" if s["server_version"] else ""))
    if host.get("cpu_model") or host.get("kernel"):
        out.append(f"- Host: {host.get('cpu_model') or '?'}, kernel {host.get('kernel') or '?'}, "
                   f"hardware PMU {'yes' if host.get('hardware_pmu') else 'no'}")
    details = [x for x in (s["mode"], f"{s['frequency']} Hz" if s["frequency"] else "",
                           f"call graph {s['call_graph']}" if s["call_graph"] else "") if x]
    if details:
        out.append("- Sampling: " + ", ".join(details))
    if s["perf_argv"]:
        out.append("- perf: " + _inline(" ".join(s["perf_argv"])))
    out.append(f"- pmuprof {s['pmuprof_version']}, input {_inline(s['source'] or '?')}")
    out += [f"- Warning: {_text(w)}" for w in s["warnings"]]
    out += [f"- Off: {_text(f['feature'])} ({_text(f['why'])})" for f in s["features_off"]]
    return out


def render_markdown(payload: Mapping[str, Any]) -> str:
    """The ticket text for a report payload."""
    lines = [f"## {_text(payload['title'])}", "", "### Findings", ""]
    lines += _findings(list(payload["findings"]))
    lines += ["### Key numbers", ""] + _numbers(payload) + [""]
    lines += ["### How it was captured", ""] + _capture(payload) + [""]
    lines.append("Full report: report.html (self-contained, opens offline); machine-readable: findings.json.")
    return "\n".join(lines) + "\n"

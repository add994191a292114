"""The summary's cards as lines of words: the one place that reads the Summary's keys for report.html's Target,
Host, Capture and Run details cards and its subtitle, and for report.md's key numbers and capture lines.

A line is words, each plain text, a name or command (code), a muted note or a line break; report.html writes
them with ``<code>`` / ``<br>`` (templates/macros.html.j2 ``words``), report.md with backticks. The two
outputs word some facts differently (a card per fact in HTML, one line per topic in Markdown), so each has
its lines; both are made here, from the same typed Summary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from collections.abc import Sequence

from .payload import ReportPayload
from .rows import TopRow
from .summaryrows import HostRow, KeptProcess, LabelValue, Summary

WordKind = Literal["text", "code", "muted", "break"]
SHOWN_HOST = ("cpu_model", "microarch", "nproc", "kernel", "hardware_pmu")  # the Host card's; Run details the rest
TOP_FRAMES = 8  # hottest functions report.md names


@dataclass(frozen=True)
class Word:
    text: str
    kind: WordKind = "text"


Words = tuple[Word, ...]


@dataclass(frozen=True)
class Line:
    """One ``<dt>``/``<dd>`` pair of a card: what, its value in words, muted when it says a fact is missing."""

    label: str
    value: Words
    muted: bool = False


def text(value: str) -> Word:
    return Word(value)


def code(value: str) -> Word:
    return Word(value, "code")


def _count(n: int | None) -> str:
    return "–" if n is None else f"{n:,}"


def _joined(parts: Sequence[Words], sep: str = ", ") -> Words:
    out: list[Word] = []
    for i, part in enumerate(parts):
        out += ([text(sep)] if i else []) + list(part)
    return tuple(out)


@dataclass(frozen=True)
class Cards:
    """What report.html's cards and report.md's lists say of the summary."""

    subtitle: str
    samples: str  # the Samples card's big number
    event: str  # and its note: the event, as asked, the rate, what was lost
    target: tuple[Line, ...]
    host: tuple[Line, ...]
    host_load: tuple[Line, ...]  # report/facts.host_load_rows, as lines
    capture: tuple[Line, ...]  # mode, call graph, duration, trigger
    input: Line
    ipc: tuple[Line, ...]  # none, or one line of every process's IPC
    run: Line  # the pmuprof versions
    run_more: tuple[Line, ...]
    numbers: tuple[Words, ...]  # report.md "Key numbers", one item each
    captured: tuple[Words, ...]  # report.md "How it was captured"


def report_cards(p: ReportPayload) -> Cards:
    """The cards of a report: its summary, with the counters' IPC per process and the hottest functions."""
    return cards(p.summary, p.counters["ipc"], p.top_functions[0]["rows"][:TOP_FRAMES])


def cards(summary: Summary, ipc: dict[str, float], top: list[TopRow]) -> Cards:
    """The cards of a summary (``ipc``: the IPC per process; ``top``: the functions report.md names)."""
    s = summary
    return Cards(
        subtitle=_subtitle(s),
        samples=_count(s["samples"]),
        event=_event(s),
        target=_target(s),
        host=_host(s["host"], s),
        host_load=tuple(Line(r["label"], (text(r["value"]),)) for r in s["host_load"]),
        capture=_capture(s),
        input=Line("input", (code(s["source"] or "–"),)),
        ipc=(Line("IPC", (text(", ".join(f"{v}" + (f" ({p})" if p else "") for p, v in _by_name(ipc))),)),)
        if ipc
        else (),
        run=Line(
            "pmuprof",
            (
                text(
                    s["pmuprof_version"]
                    + (
                        f" (report written by {s['report_version']})"
                        if s["report_version"] != s["pmuprof_version"]
                        else ""
                    )
                ),
            ),
        ),
        run_more=_run(s),
        numbers=_numbers(s, ipc, top),
        captured=_captured(s),
    )


def _by_name(values: dict[str, float]) -> list[tuple[str, float]]:
    """Jinja's dictsort: by key, ignoring case."""
    return sorted(values.items(), key=lambda kv: kv[0].lower())


def _subtitle(s: Summary) -> str:
    out = (", ".join(s["processes"]) or "no samples") + (f" · {s['server_version']}" if s["server_version"] else "")
    out += f" · {_count(s['samples'])} samples" + (f" of {s['event_recorded']}" if s["event_recorded"] else "")
    out += f" · {s['duration_s']} s" if s["duration_s"] is not None else ""
    return out + (f" · captured {s['started']}" if s["started"] else "")


def _event(s: Summary) -> str:
    out = f"event {s['event_recorded'] or 'not recorded in this input'}"
    out += f" (asked for {s['event_requested']})" if s["event_substituted"] else ""
    out += f" at {_rate(s)}" if s["frequency"] else ""
    return out + (f", {_count(s['lost'])} lost" if s["lost"] else "")


def _rate(s: Summary) -> str:
    """The rate perf used, and the one asked when perf throttled it."""
    asked = s.get("frequency_requested")
    return f"{s['frequency']} Hz" + (f" (asked {asked} Hz, throttled)" if asked else "")


def _target(s: Summary) -> tuple[Line, ...]:
    lines = [
        Line(
            t["label"] or t["comm"] or "pid",
            (text(f"pid {t['pid']}" + (f", {t['threads']} threads" if t["threads"] else "")),)
            + ((Word("", "break"), code(t["exe"])) if t["exe"] else ()),
        )
        for t in s["targets"]
    ] or [Line("processes", (text(", ".join(s["processes"]) or "–"),))]
    return tuple(lines + ([Line("server", (text(s["server_version"]),))] if s["server_version"] else []))


def _host(h: HostRow, s: Summary) -> tuple[Line, ...]:
    pause = s["pause"]
    lines = [
        Line("CPU", (text(h["cpu_model"] + (f" ({h['microarch']})" if h["microarch"] else "")),))
        if h["cpu_model"]
        else None,
        Line("CPUs", (text(str(h["nproc"])),)) if h["nproc"] else None,
        Line("kernel", (text(h["kernel"]),)) if h["kernel"] else None,
        Line("PMU", (text("hardware" if h["hardware_pmu"] else "none (software events only)"),))
        if h["hardware_pmu"] is not None
        else None,
        Line("PAUSE", (text(f"{pause['cycles']:.1f} cycles" + (f", {pause['ns']:.1f} ns" if pause["ns"] else "")),))
        if pause
        else None,
        Line("host", (text("not recorded in this input"),), muted=True)
        if not h["cpu_model"] and not h["kernel"]
        else None,
    ]
    return tuple(line for line in lines if line is not None)


def _capture(s: Summary) -> tuple[Line, ...]:
    lines = [
        Line("mode", (text(s["mode"]),)) if s["mode"] else None,
        Line("call graph", (text(s["call_graph"]),)) if s["call_graph"] else None,
        Line("duration", (text(f"{s['duration_s']} s"),)) if s["duration_s"] is not None else None,
        Line("trigger", (text(s["trigger"]),)) if s["trigger"] else None,
    ]
    return tuple(line for line in lines if line is not None)


def _run(s: Summary) -> tuple[Line, ...]:
    """Run details after the versions: the command lines, the processes kept and left out, the rest of the host."""
    lines = [
        Line("command", (code(" ".join(s["command"])),)) if s["command"] else None,
        Line("perf", (code(" ".join(s["perf_argv"])),)) if s["perf_argv"] else None,
        Line("processes", _processes(s["kept"], s["selection"])) if s["selection"] else None,
        Line("samples (all processes)", (text(_count(s["samples_total"])),))
        if s["samples_total"] is not None
        else None,
    ]
    host = sorted(
        ((k, v) for k, v in s["host"].items() if v is not None and k not in SHOWN_HOST), key=lambda kv: kv[0].lower()
    )
    return tuple(line for line in lines if line is not None) + tuple(Line(k, (text(str(v)),)) for k, v in host)


def _processes(kept: list[KeptProcess], selection: str) -> Words:
    """The processes kept (name, pid, samples), how they were chosen, and those left out, largest first."""
    shown = _joined(
        [
            (code(k["label"]), text((f" pid {k['pid']}" if k["pid"] is not None else "") + f" {_count(k['samples'])}"))
            for k in kept
            if k["kept"]
        ]
    )
    out = shown + (Word("", "break"), Word(selection, "muted"))
    left = [k for k in kept if not k["kept"]]
    if left:
        out += (Word("", "break"), text("left out, largest first: ")) + _joined(
            [(code(k["comm"]), text(f" pid {k['pid']} {_count(k['samples'])}")) for k in left]
        )
    return out


def _numbers(s: Summary, ipc: dict[str, float], rows: list[TopRow]) -> tuple[Words, ...]:
    """report.md's key numbers: samples and event, duration, IPC, host load, the hottest functions."""
    out: list[Words] = [
        (
            text(
                f"Samples: {s['samples']:,}"
                + (f" of {s['event_recorded']}" if s["event_recorded"] else "")
                + (f" (asked for {s['event_requested']})" if s["event_substituted"] else "")
            ),
        )
    ]
    if s["duration_s"] is not None:
        out.append((text(f"Duration: {s['duration_s']} s" + (", interrupted" if s["interrupted"] else "")),))
    out += [((text("IPC of "), code(p), text(f": {v}")) if p else (text(f"IPC: {v}"),)) for p, v in ipc.items()]
    if s["host_load"]:
        out.append((text("Host load during the capture: " + _load(s["host_load"])),))
    if rows:
        hot = [(code(r["name"]), text(f" {100 * r['self_share']:.1f} %")) for r in rows if r["self"]]
        out.append((text("Hottest functions (self): "),) + _joined(hot))
    return tuple(out)


def _load(rows: list[LabelValue]) -> str:
    return "; ".join(f"{r['label']} {r['value']}" for r in rows)


def _captured(s: Summary) -> tuple[Words, ...]:
    """report.md's lines on the capture: target, processes, host, sampling, perf, pmuprof, warnings."""
    h, out = s["host"], list[Words]()
    if s["processes"]:
        server = (text(f" ({s['server_version']})"),) if s["server_version"] else ()
        out.append((text("Target: "),) + _joined([(code(p),) for p in s["processes"]]) + server)
    if s["selection"]:
        out.append((text("Processes: "), text(s["selection"])))
    if h["cpu_model"] or h["kernel"]:
        known = ", ".join(k for k in (h["cpu_model"], f"kernel {h['kernel']}" if h["kernel"] else "") if k)
        out.append((text(f"Host: {known}, hardware PMU {'yes' if h['hardware_pmu'] else 'no'}"),))
    details = [
        s["mode"],
        _rate(s) if s["frequency"] else "",
        f"call graph {s['call_graph']}" if s["call_graph"] else "",
    ]
    if any(details):
        out.append((text("Sampling: " + ", ".join(d for d in details if d)),))
    if s["perf_argv"]:
        out.append((text("perf: "), code(" ".join(s["perf_argv"]))))
    out.append(
        (text(f"pmuprof {s['pmuprof_version']}"),) + ((text(", input "), code(s["source"])) if s["source"] else ())
    )
    out += [(text("Warning: "), text(w)) for w in s["warnings"]]
    out += [(text("Off: "), text(f["feature"]), text(" ("), text(f["why"]), text(")")) for f in s["features_off"]]
    return tuple(out)

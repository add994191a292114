"""History index: scan a directory of runs into trend data, SVG chart geometry and regression flags."""

from __future__ import annotations

import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from .. import __version__
from ..errors import InputError, PmuprofError
from ..model.folded import load_folded
from ..model.profile import Profile
from ..model.counters import Counters
from ..model.run import Run
from ..model.rundir import COUNTERS, FINDINGS_JSON, REPORT_HTML, RUN_JSON, STACKS, read_json, read_typed
from ..report.counters import derived_ipc
from ..report.html import render

SHARE_POINTS = 0.05  # a finding/function share up by more than 5 points vs the median is a regression
IPC_DROP = 0.10  # IPC down by more than 10 % vs the median is a regression
SERIES = 6  # lines per chart
TOP_FUNCTIONS = 10
MAX_DEPTH = 2  # BASE/<run>/run.json and BASE/<group>/<run>/run.json
CHART_W, CHART_H, PAD = 720, 180, 36
PALETTE = ("#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b")


@dataclass(frozen=True)
class RunSummary:
    """What the index shows about one run directory."""

    name: str  # path relative to the scanned directory
    started: str
    target: str
    samples: int
    event: str
    findings: tuple[dict[str, Any], ...] = ()
    functions: tuple[tuple[str, float], ...] = ()  # (function, self share), hottest first
    ipc: float | None = None
    report: str | None = None  # link to report.html relative to the index file
    trigger: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    complete: bool = True  # has findings.json: an empty or failed capture is no baseline

    @property
    def top_finding(self) -> dict[str, Any] | None:
        return self.findings[0] if self.findings else None


def find_runs(directory: Path) -> list[Path]:
    """Run directories (a run.json carrying pmuprof's marker) up to MAX_DEPTH below, no symlinks."""
    out = []
    base_depth = len(directory.parts)
    for root, dirs, files in os.walk(directory):
        here = Path(root)
        dirs[:] = sorted(d for d in dirs if not (here / d).is_symlink())
        if len(here.parts) - base_depth >= MAX_DEPTH:
            dirs[:] = []
        if RUN_JSON in files and here != directory:
            out.append(here)
    return out


def _target(run: Run) -> str:
    return ", ".join(f"{t.label or t.comm or '?'}[{t.pid}]" for t in run.targets) or "–"


def _functions(path: Path) -> tuple[tuple[tuple[str, float], ...], int]:
    """The hottest functions by self share, and the samples, of a run's stacks.folded."""
    if not (path / STACKS).is_file():
        return (), 0
    stacks, _ = load_folded(path / STACKS)
    profile = Profile(stacks)
    total = profile.total
    if not total:
        return (), 0
    top = sorted(profile.self_counts().items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_FUNCTIONS]
    return tuple((name, round(count / total, 6)) for name, count in top), total


def _int(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


def _ipc_or_none(path: Path, notes: list[str]) -> float | None:
    try:
        return _ipc(path)
    except PmuprofError as err:
        notes.append(f"counters.json damaged: {err}")
        return None


def _ipc(path: Path) -> float | None:
    ipc = derived_ipc(read_typed(path / COUNTERS, Counters, Counters()) or Counters())
    if not ipc:
        return None
    return ipc.get("", next(iter(ipc.values())))


def _damaged(path: Path, base: Path, err: PmuprofError) -> RunSummary:
    """A run directory whose run.json cannot be read: listed with why, never a baseline."""
    return RunSummary(name=path.relative_to(base).as_posix(), started="", target="–", samples=0, event="",
                      notes=(f"damaged: {err}",), complete=False)


def _share(value: Any) -> float:
    """A findings.json share as a number in 0..1 (anything else counts as 0)."""
    try:
        share = float(value or 0.0)
    except (TypeError, ValueError):
        return 0.0
    return share if 0.0 <= share <= 1.0 else 0.0


def _findings(found: Any) -> tuple[dict[str, Any], ...]:
    items = found.get("findings", []) if isinstance(found, dict) else []
    return tuple({"rule": str(f.get("rule", "?")), "severity": str(f.get("severity", "info")),
                  "title": str(f.get("title", "")), "share": _share(f.get("share"))}
                 for f in (items if isinstance(items, list) else []) if isinstance(f, dict))


def _read_findings(path: Path, notes: list[str]) -> dict | None:
    try:
        found = read_json(path / FINDINGS_JSON, None)
    except PmuprofError as err:
        notes.append(f"findings.json damaged: {err}")
        return None
    if found is None:
        notes.append("no findings.json (report not built)")
    return found if isinstance(found, dict) else None


def summarize(path: Path, base: Path, index_dir: Path) -> RunSummary | None:
    """One run directory → RunSummary; None when its run.json was not written by pmuprof; a damaged
    run is listed with a note (one bad run never hides the others)."""
    try:
        raw = read_json(path / RUN_JSON, {})
        if not isinstance(raw, dict) or "pmuprof_version" not in raw:
            return None
        run = read_typed(path / RUN_JSON, Run, Run()) or Run()
    except PmuprofError as err:
        return _damaged(path, base, err)
    notes: list[str] = []
    try:
        functions, total = _functions(path)
    except PmuprofError as err:
        functions, total, notes = (), 0, [str(err)]
    found = _read_findings(path, notes)
    findings = _findings(found)
    facts = (found or {}).get("profile")
    samples = total or _int(facts.get("samples") if isinstance(facts, dict) else 0)
    report = None
    if (path / REPORT_HTML).is_file():
        report = "./" + Path(os.path.relpath(path / REPORT_HTML, index_dir)).as_posix()
    return RunSummary(
        name=path.relative_to(base).as_posix(), started=run.started, target=_target(run),
        samples=samples, event=run.record.event_recorded or run.record.event_requested,
        findings=findings, functions=functions, ipc=_ipc_or_none(path, notes), report=report,
        trigger=run.trigger.condition if run.trigger else None, notes=tuple(notes), complete=found is not None)


def scan(directory: Path, index_dir: Path | None = None) -> list[RunSummary]:
    """All pmuprof runs under ``directory``, oldest first."""
    if not directory.is_dir():
        raise InputError(f"{directory}: no such directory", "pass the directory that holds the dated runs")
    index_dir = index_dir or directory
    runs = [s for s in (summarize(p, directory, index_dir) for p in find_runs(directory)) if s]
    return sorted(runs, key=lambda r: (r.started, r.name))


def _share_of(items: Iterable[tuple[str, float]], key: str) -> float:
    return next((share for name, share in items if name == key), 0.0)


def _finding_items(run: RunSummary) -> list[tuple[str, float]]:
    return [(f["rule"], f["share"]) for f in run.findings]


def regressions(runs: Sequence[RunSummary]) -> list[dict[str, Any]]:
    """Flags per run vs the runs before it: share up > SHARE_POINTS vs their median, a new
    critical finding, or IPC down > IPC_DROP vs the median. Runs without findings.json are skipped."""
    flags: list[dict[str, Any]] = []
    runs = [r for r in runs if r.complete]
    for i, run in enumerate(runs):
        before = runs[:i]
        if not before:
            continue
        for kind, items, history in (("finding", _finding_items(run), [_finding_items(r) for r in before]),
                                     ("function", list(run.functions), [list(r.functions) for r in before])):
            for name, share in items:
                median = statistics.median(_share_of(h, name) for h in history)
                if share - median > SHARE_POINTS:
                    flags.append({"run": run.name, "kind": kind, "name": name,
                                  "text": f"{name}: {100 * share:.1f}% vs median {100 * median:.1f}% "
                                          f"of {len(before)} earlier run(s)"})
        earlier_critical = {f["rule"] for r in before for f in r.findings if f["severity"] == "critical"}
        for f in run.findings:
            if f["severity"] == "critical" and f["rule"] not in earlier_critical:
                flags.append({"run": run.name, "kind": "new-critical", "name": f["rule"],
                              "text": f"new critical finding: {f['rule']} ({100 * f['share']:.1f}%)"})
        ipcs = [r.ipc for r in before if r.ipc is not None]
        if run.ipc is not None and ipcs:
            median = statistics.median(ipcs)
            if median > 0 and (median - run.ipc) / median > IPC_DROP:
                flags.append({"run": run.name, "kind": "ipc", "name": "IPC",
                              "text": f"IPC {run.ipc:.2f} vs median {median:.2f}"})
    return flags


def _pick_series(per_run: list[list[tuple[str, float]]]) -> list[str]:
    peak: dict[str, float] = {}
    for items in per_run:
        for name, share in items:
            peak[name] = max(peak.get(name, 0.0), share)
    return [n for n, _ in sorted(peak.items(), key=lambda kv: (-kv[1], kv[0]))[:SERIES]]


def chart(title: str, labels: list[str], series: dict[str, list[float | None]], unit: str) -> dict[str, Any]:
    """Geometry for an inline SVG line chart: polyline point strings, markers, axis ticks."""
    values = [v for vals in series.values() for v in vals if v is not None]
    top = max(values) if values else 1.0
    top = top * 1.1 if top > 0 else 1.0
    width, height = CHART_W - 2 * PAD, CHART_H - 2 * PAD
    step = width / max(len(labels) - 1, 1)

    def xy(i: int, v: float) -> tuple[float, float]:
        return round(PAD + i * step, 1), round(PAD + height - height * v / top, 1)

    lines = []
    for k, (name, vals) in enumerate(series.items()):
        pts = [(i, v) for i, v in enumerate(vals) if v is not None]
        marks = [{"x": xy(i, v)[0], "y": xy(i, v)[1], "tip": f"{name} @ {labels[i]}: {_fmt(v, unit)}"} for i, v in pts]
        lines.append({"name": name, "color": PALETTE[k % len(PALETTE)], "marks": marks,
                      "points": " ".join(f"{m['x']},{m['y']}" for m in marks)})
    ticks = [{"y": xy(0, top * f / 1.1)[1], "label": _fmt(top * f / 1.1, unit)} for f in (0.0, 0.55, 1.1)]
    xlabels = [{"x": xy(i, 0)[0], "label": lab} for i, lab in enumerate(labels)]
    return {"title": title, "width": CHART_W, "height": CHART_H, "pad": PAD, "lines": lines,
            "ticks": ticks, "xlabels": xlabels, "unit": unit}


def _fmt(value: float, unit: str) -> str:
    return f"{100 * value:.1f}%" if unit == "share" else f"{value:.2f}"


def _label(run: RunSummary) -> str:
    return run.started[5:16].replace("T", " ") or run.name  # MM-DD HH:MM fits eight to a chart


def build_payload(runs: Sequence[RunSummary], title: str) -> dict[str, Any]:
    """Everything the history template shows; the same runs give the same payload."""
    labels = [_label(r) for r in runs]
    charts = []
    rules = _pick_series([_finding_items(r) for r in runs])
    if rules:
        charts.append(chart("Share of the main findings", labels,
                            {n: [_share_of(_finding_items(r), n) for r in runs] for n in rules}, "share"))
    funcs = _pick_series([list(r.functions) for r in runs])
    if funcs:
        charts.append(chart("Top functions (self share)", labels,
                            {n: [_share_of(r.functions, n) for r in runs] for n in funcs}, "share"))
    if any(r.ipc is not None for r in runs):
        charts.append(chart("IPC (instructions per cycle)", labels, {"IPC": [r.ipc for r in runs]}, "ipc"))
    flags = regressions(runs)
    flagged = {f["run"] for f in flags}
    rows = [{"name": r.name, "started": r.started, "target": r.target, "samples": r.samples, "event": r.event,
             "top": r.top_finding, "report": r.report, "ipc": r.ipc, "trigger": r.trigger,
             "notes": list(r.notes), "flagged": r.name in flagged} for r in reversed(runs)]
    return {"title": title, "runs": rows, "charts": charts, "regressions": flags,
            "count": len(runs), "latest": runs[-1].started if runs else ""}


def render_index(directory: Path, out: Path, title: str = "") -> tuple[str, dict[str, Any]]:
    """The index HTML for the runs under ``directory`` (links relative to ``out``) and its payload."""
    runs = scan(directory, out.parent)
    payload = build_payload(runs, title or f"pmuprof history: {directory.resolve().name}")
    payload["version"] = __version__
    return render("history.html.j2", payload), payload


def latest_flags(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """Regression flags of the newest run only (what a nightly check should alert on)."""
    newest = payload["runs"][0]["name"] if payload["runs"] else None
    return [f for f in payload["regressions"] if f["run"] == newest]

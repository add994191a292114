"""History index: scan a directory of runs into trend data, SVG chart geometry, regressions and improvements."""

from __future__ import annotations

import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from collections.abc import Iterable, Sequence

from .. import __version__
from ..infile import evidence_problem
from ..errors import InputError, PmuprofError
from ..model.folded import load_folded
from ..model.profile import Profile
from ..model.stacks import Stacks
from ..model.counters import Counters
from ..model.foundfile import FoundFinding, found_findings
from ..model.run import Run
from ..model.rundir import (
    COUNTERS,
    FINDINGS_JSON,
    RECEIVED_FIX,
    REPORT_HTML,
    RUN_JSON,
    STACKS,
    check_received,
    read_json,
    read_typed,
)
from ..report.html import render
from .judge import Basis, Measure, describe, judge, run_basis

IPC_DROP = 0.10  # IPC down by more than 10 % vs the median is a regression (up by as much, an improvement)
SERIES = 6  # lines per chart
TOP_FUNCTIONS = 10  # per run, the functions charted and judged
TRACKED = 200  # per run, the functions whose samples are kept (a hot function that cooled is still found)
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
    findings: tuple[FoundFinding, ...] = ()
    functions: tuple[tuple[str, float], ...] = ()  # (function, self share), hottest first
    ipc: float | None = None
    basis: Basis = Basis(None, None, "not read")
    function_samples: tuple[tuple[str, int], ...] = ()  # (function, self samples), the TRACKED hottest
    report: str | None = None  # link to report.html relative to the index file
    trigger: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    complete: bool = True  # has a sound findings.json: an empty, failed or damaged run is no baseline

    @property
    def top_finding(self) -> FoundFinding | None:
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


def _functions(path: Path) -> tuple[tuple[tuple[str, int], ...], int]:
    """The TRACKED hottest functions by self samples, and the samples, of a run's stacks.folded."""
    why = evidence_problem(path / STACKS)
    if why:
        raise InputError(f"{path / STACKS}: {why}: not read", RECEIVED_FIX)
    if not (path / STACKS).is_file():
        return (), 0
    stacks, _ = load_folded(path / STACKS)
    profile = Profile(Stacks.of(stacks))
    top = profile.stacks.top_self(TRACKED)
    return tuple(top), profile.total


def _int(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


def _read_counters(path: Path, notes: list[str]) -> Counters:
    try:
        return read_typed(path / COUNTERS, Counters, Counters()) or Counters()
    except PmuprofError as err:
        notes.append(f"counters.json damaged: {err}")
        return Counters()


def _ipc(counters: Counters) -> float | None:
    ipc = counters.ipc_by_process()
    if not ipc:
        return None
    return ipc.get("", next(iter(ipc.values())))


def _damaged(path: Path, base: Path, err: PmuprofError) -> RunSummary:
    """A run directory whose run.json cannot be read: listed with why, never a baseline."""
    return RunSummary(
        name=path.relative_to(base).as_posix(),
        started="",
        target="–",
        samples=0,
        event="",
        notes=(f"damaged: {err}",),
        complete=False,
    )


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
        check_received(path)
        raw = read_json(path / RUN_JSON, {})
        if not isinstance(raw, dict) or "pmuprof_version" not in raw:
            return None
        run = read_typed(path / RUN_JSON, Run, Run()) or Run()
    except PmuprofError as err:
        return _damaged(path, base, err)
    notes: list[str] = []
    counters = _read_counters(path, notes)
    try:
        counted, total = _functions(path)
    except PmuprofError as err:
        counted, total, notes = (), 0, notes + [str(err)]
    found = _read_findings(path, notes)
    findings, whole = found_findings(found, notes)
    facts = (found or {}).get("profile")
    samples = total or _int(facts.get("samples") if isinstance(facts, dict) else 0)
    report = None
    if (path / REPORT_HTML).is_file():
        report = "./" + Path(os.path.relpath(path / REPORT_HTML, index_dir)).as_posix()
    functions = tuple((name, round(count / total, 6)) for name, count in counted[:TOP_FUNCTIONS])
    return RunSummary(
        name=path.relative_to(base).as_posix(),
        started=run.started,
        target=_target(run),
        samples=samples,
        event=run.record.event_recorded or run.record.event_requested,
        findings=findings,
        functions=functions,
        ipc=_ipc(counters),
        report=report,
        trigger=run.trigger.condition if run.trigger else None,
        notes=tuple(notes),
        complete=found is not None and whole,
        basis=run_basis(run, counters, samples),
        function_samples=counted,
    )


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
    return [(f.rule, f.share) for f in run.findings]


def _measure(run: RunSummary, kind: str, name: str) -> Measure:
    """A finding's or function's samples in a run (0 when absent) with the run's basis."""
    if kind == "finding":
        count = _share_of(_finding_items(run), name) * run.samples
    else:
        count = float(next((c for n, c in run.function_samples if n == name), 0))
    return Measure(count, run.samples, run.basis.unit)


def _names(run: RunSummary, before: Sequence[RunSummary]) -> list[tuple[str, str]]:
    """What to judge: findings of this or any earlier run, functions in this or an earlier run's top list."""
    out = {("finding", f.rule) for r in [run, *before] for f in r.findings}
    out |= {("function", name) for r in [run, *before] for name, _ in r.functions}
    return sorted(out)


def _flag(run: RunSummary, kind: str, name: str, j, runs: int, text: str = "") -> dict[str, Any]:
    return {
        "run": run.name,
        "kind": kind,
        "name": name,
        "direction": j.direction,
        "basis": j.basis,
        "now": round(j.now, 6),
        "baseline": round(j.baseline, 6),
        "noise": round(j.noise, 6),
        "text": text or describe(name, j, run.basis.cpus, runs),
    }


def judgements(runs: Sequence[RunSummary]) -> list[dict[str, Any]]:
    """Regressions and improvements of each run vs the runs before it (judge.py): findings and functions
    by CPU time per second per sampled CPU beyond sampling noise, a new critical finding only when its
    CPU time also rose, IPC by more than IPC_DROP. Runs without findings.json are skipped."""
    out: list[dict[str, Any]] = []
    runs = [r for r in runs if r.complete]
    for i, run in enumerate(runs):
        before = runs[:i]
        if not before:
            continue
        earlier_critical = {f.rule for r in before for f in r.findings if f.severity == "critical"}
        for kind, name in _names(run, before):
            j = judge(_measure(run, kind, name), [_measure(r, kind, name) for r in before])
            if j is None:
                continue
            out.append(_flag(run, kind, name, j, len(before)))
            severity = next((f.severity for f in run.findings if f.rule == name), "") if kind == "finding" else ""
            if j.direction == "regression" and severity == "critical" and name not in earlier_critical:
                out.append(
                    _flag(
                        run,
                        "new-critical",
                        name,
                        j,
                        len(before),
                        f"new critical finding: {name} ({100 * _share_of(_finding_items(run), name):.1f}% of samples)",
                    )
                )
        out += _ipc_flags(run, before)
    return out


def _ipc_flags(run: RunSummary, before: Sequence[RunSummary]) -> list[dict[str, Any]]:
    ipcs = [r.ipc for r in before if r.ipc is not None]
    if run.ipc is None or not ipcs or statistics.median(ipcs) <= 0:
        return []
    median = statistics.median(ipcs)
    change = (run.ipc - median) / median
    if abs(change) <= IPC_DROP:
        return []
    return [
        {
            "run": run.name,
            "kind": "ipc",
            "name": "IPC",
            "direction": "improvement" if change > 0 else "regression",
            "basis": "ipc",
            "now": round(run.ipc, 6),
            "baseline": round(median, 6),
            "noise": 0.0,
            "text": f"IPC {run.ipc:.2f} vs median {median:.2f}",
        }
    ]


def regressions(runs: Sequence[RunSummary]) -> list[dict[str, Any]]:
    """The judgements that are regressions (what --fail-on-regression acts on)."""
    return [j for j in judgements(runs) if j["direction"] == "regression"]


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
        lines.append(
            {
                "name": name,
                "color": PALETTE[k % len(PALETTE)],
                "marks": marks,
                "points": " ".join(f"{m['x']},{m['y']}" for m in marks),
            }
        )
    ticks = [{"y": xy(0, top * f / 1.1)[1], "label": _fmt(top * f / 1.1, unit)} for f in (0.0, 0.55, 1.1)]
    xlabels = [{"x": xy(i, 0)[0], "label": lab} for i, lab in enumerate(labels)]
    return {
        "title": title,
        "width": CHART_W,
        "height": CHART_H,
        "pad": PAD,
        "lines": lines,
        "ticks": ticks,
        "xlabels": xlabels,
        "unit": unit,
    }


def _fmt(value: float, unit: str) -> str:
    return f"{100 * value:.1f}%" if unit in ("share", "cpu") else f"{value:.2f}"


def _label(run: RunSummary) -> str:
    return run.started[5:16].replace("T", " ") or run.name  # MM-DD HH:MM fits eight to a chart


def _weights(run: RunSummary, items: Iterable[tuple[str, float]], timed: bool) -> list[tuple[str, float]]:
    """Shares as they are, or as CPU time per sampled CPU when every run has a time basis."""
    if not timed:
        return list(items)
    return [(name, share * run.samples * (run.basis.unit or 0.0)) for name, share in items]


def _charts(runs: Sequence[RunSummary]) -> list[dict[str, Any]]:
    labels = [_label(r) for r in runs]
    timed = bool(runs) and all(r.basis.unit is not None for r in runs)
    unit, what = ("cpu", "CPU time, % of the sampled CPUs") if timed else ("share", "share of samples")
    charts = []
    per_run = [_weights(r, _finding_items(r), timed) for r in runs]
    rules = _pick_series(per_run)
    if rules:  # a run without sound findings is a gap in these lines, not a 0
        charts.append(
            chart(
                f"Main findings ({what})",
                labels,
                {n: [_share_of(w, n) if r.complete else None for r, w in zip(runs, per_run)] for n in rules},
                unit,
            )
        )
    per_run = [_weights(r, r.functions, timed) for r in runs]
    funcs = _pick_series(per_run)
    if funcs:
        charts.append(
            chart(f"Top functions (self, {what})", labels, {n: [_share_of(w, n) for w in per_run] for n in funcs}, unit)
        )
    if any(r.ipc is not None for r in runs):
        charts.append(chart("IPC (instructions per cycle)", labels, {"IPC": [r.ipc for r in runs]}, "ipc"))
    return charts


def build_payload(runs: Sequence[RunSummary], title: str) -> dict[str, Any]:
    """Everything the history template shows; the same runs give the same payload."""
    judged = judgements(runs)
    flags = [j for j in judged if j["direction"] == "regression"]
    flagged = {f["run"] for f in flags}
    rows = [
        {
            "name": r.name,
            "started": r.started,
            "target": r.target,
            "samples": r.samples,
            "event": r.event,
            "top": r.top_finding.as_json() if r.top_finding else None,
            "report": r.report,
            "ipc": r.ipc,
            "trigger": r.trigger,
            "basis": r.basis.text,
            "notes": list(r.notes),
            "flagged": r.name in flagged,
        }
        for r in reversed(runs)
    ]
    return {
        "title": title,
        "runs": rows,
        "charts": _charts(runs),
        "regressions": flags,
        "improvements": [j for j in judged if j["direction"] == "improvement"],
        "count": len(runs),
        "latest": runs[-1].started if runs else "",
    }


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

"""The one-line verdict and the short JSON summary of a run (for --json, notifications and metrics)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

from ..findings.model import Finding, ordered

MAX_LINE = 300


def _causes(findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in ordered(list(findings)) if not f.explained_by]


def verdict_line(findings: Iterable[Finding], samples: int, where: str = "") -> str:
    """``CRITICAL: <title> (23 % of samples, mariadbd); 2 more: 1 warning, 1 info`` — one line, bounded."""
    causes = _causes(findings)
    place = f" on {where}" if where else ""
    if not samples and not causes:
        return f"NO SAMPLES{place}: the target was idle or off-CPU during the capture"
    if not causes:
        return f"OK{place}: no rule fired ({samples:,} samples)"
    top = causes[0]
    proc = f", {top.process}" if top.process else ""
    line = f"{top.severity.upper()}{place}: {' '.join(top.title.split())} ({100 * top.share:.0f} % of {top.confidence.get('basis') or 'samples'}{proc})"
    rest = causes[1:]
    if rest:
        counts: dict[str, int] = {}
        for f in rest:
            counts[f.severity] = counts.get(f.severity, 0) + 1
        line += f"; {len(rest)} more: " + ", ".join(f"{n} {sev}" for sev, n in counts.items())
    return line if len(line) <= MAX_LINE else line[:MAX_LINE - 1] + "…"


def run_summary(run_dir: Path, samples: int, findings: Iterable[Finding], paths: Mapping[str, Path],
                exit_code: int, where: str = "") -> dict[str, Any]:
    """What `capture --json` prints: where the run is, its verdict, and each finding in brief."""
    found = ordered(list(findings))
    return {
        "run_dir": str(run_dir),
        "samples": samples,
        "verdict": verdict_line(found, samples, where),
        "exit_code": exit_code,
        "files": {name: str(path) for name, path in sorted(paths.items())},
        "findings": [{"rule": f.rule, "severity": f.severity, "share": round(f.share, 6), "title": f.title,
                      "process": f.process, "explained_by": f.explained_by} for f in found],
    }

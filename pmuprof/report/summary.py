"""The one-line verdict and the short JSON summary of a run (for --json, notifications and metrics)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from collections.abc import Mapping

from ..findings.diagnosis import Diagnosis
from ..model.labels import without_kernel_suffix
from .verdict import share_text

MAX_LINE = 300


def verdict_line(diagnosis: Diagnosis, samples: int, where: str = "") -> str:
    """``CRITICAL: <title> (23 % of samples, mariadbd); 2 more: 1 warning, 1 info`` — one line, bounded."""
    causes = diagnosis.causes
    place = f" on {where}" if where else ""
    if not samples and not causes:
        return f"NO SAMPLES{place}: the target was idle or off-CPU during the capture"
    if not causes:
        b = diagnosis.busiest
        busy = (
            f"; most time in {without_kernel_suffix(b.function)} ({share_text(b.samples, b.total, 'inclusive')})"
            if b and b.function and b.total
            else ""
        )
        return _bounded(f"OK{place}: no rule fired ({samples:,} samples){busy}")
    top = causes[0]
    proc = f", {top.process}" if top.process and not top.basis.startswith("the ") else ""
    line = (
        f"{top.severity.upper()}{place}: {' '.join(top.title.split())} ({100 * top.share:.0f} % of {top.basis}{proc})"
    )
    rest = causes[1:]
    if rest:
        counts: dict[str, int] = {}
        for f in rest:
            counts[f.severity] = counts.get(f.severity, 0) + 1
        line += f"; {len(rest)} more: " + ", ".join(f"{n} {sev}" for sev, n in counts.items())
    return _bounded(line)


def _bounded(line: str) -> str:
    return line if len(line) <= MAX_LINE else line[: MAX_LINE - 1] + "…"


def run_summary(
    run_dir: Path, samples: int, diagnosis: Diagnosis, paths: Mapping[str, Path], exit_code: int, where: str = ""
) -> dict[str, Any]:
    """What `capture --json` prints: where the run is, its verdict, and each finding in brief."""
    return {
        "run_dir": str(run_dir),
        "samples": samples,
        "verdict": verdict_line(diagnosis, samples, where),
        "exit_code": exit_code,
        "files": {name: str(path) for name, path in sorted(paths.items())},
        "findings": [
            {
                "rule": f.rule,
                "severity": f.severity,
                "share": round(f.share, 6),
                "title": f.title,
                "process": f.process,
                "explained_by": f.explained_by,
            }
            for f in diagnosis.findings
        ],
    }

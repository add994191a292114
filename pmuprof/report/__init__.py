"""Writers: report.html, findings.json and report.md from a Profile and its findings."""

from __future__ import annotations

import functools
from pathlib import Path

from .. import outfile
from ..findings.diagnosis import Diagnosis
from ..model.profile import Profile
from ..model.rundir import FINDINGS_JSON, REPORT_HTML, REPORT_MD
from .flamesvg import flame_svg
from .flametrie import Trie
from .html import write_report, write_text
from .jsonw import findings_json
from .markdown import render_markdown
from .payload import ReportPayload, build_payload
from .wallclock import wall_stacks, wall_svg

__all__ = ["ReportPayload", "build_payload", "findings_json", "write_outputs"]
FLAME_SVG = "flame.svg"  # beside report.html: a picture for trackers that refuse HTML attachments


def write_outputs(
    profile: Profile, diagnosis: Diagnosis, out_dir: Path, max_flame_nodes: int = 200_000
) -> dict[str, Path]:
    """Write report.html, findings.json, report.md and flame.svg into ``out_dir``; return their paths
    under "html", "json", "md", "svg"."""
    out_dir = Path(out_dir)
    outfile.ensure_dir(out_dir)
    trie = functools.cache(lambda: Trie.of([profile.stacks]))  # one trie for the interactive graph and the SVG
    payload = build_payload(profile, diagnosis, max_flame_nodes, trie)
    paths = {
        "html": write_report(out_dir / REPORT_HTML, payload, wall_svg(wall_stacks(profile)[0])),
        "json": write_text(out_dir / FINDINGS_JSON, findings_json(profile, diagnosis)),
        "md": write_text(out_dir / REPORT_MD, render_markdown(payload)),
        "svg": write_text(out_dir / FLAME_SVG, flame_svg(profile, payload.title, trie())),
    }
    return paths

"""flame.svg beside report.html: well-formed with hostile names, bounded in size, geometry of a flame graph;
report.md lists every finding and links the picture."""

from __future__ import annotations

import random
import re
import xml.dom.minidom

from report_fixtures import HOSTILE_SCRIPT, HOSTILE_TEMPLATE, profile

from pmuprof.findings.diagnosis import Diagnosis
from pmuprof.findings.model import Finding
from pmuprof.model.profile import Profile
from pmuprof.report import write_outputs
from pmuprof.report.flamesvg import MAX_FRAMES, PAD, WIDTH, flame_svg


def _frames(svg: str) -> list[tuple[str, float, float, float]]:
    doc = xml.dom.minidom.parseString(svg)
    out = []
    for g in doc.getElementsByTagName("g"):
        title = g.getElementsByTagName("title")[0].firstChild.data
        rect = g.getElementsByTagName("rect")[0]
        out.append(
            (
                title.rsplit(" (", 1)[0],
                float(rect.getAttribute("x")),
                float(rect.getAttribute("width")),
                float(rect.getAttribute("y")),
            )
        )
    return out


def test_hostile_names_stay_text():
    nasty = 'evil\x01name & <b>"quoted"</b>'
    prof = Profile({("mariadbd", HOSTILE_SCRIPT, HOSTILE_TEMPLATE): 10, ("mariadbd", nasty): 5})
    svg = flame_svg(prof, title="<script>alert(1)</script>")
    assert "<script" not in svg and "<b>" not in svg
    names = {name for name, *_ in _frames(svg)}
    assert {HOSTILE_SCRIPT, HOSTILE_TEMPLATE, 'evil\ufffdname & <b>"quoted"</b>'} <= names


def test_geometry_children_within_parents_root_spans_the_width():
    prof = profile()
    svg = flame_svg(prof)
    assert flame_svg(prof) == svg  # same input, same bytes
    frames = _frames(svg)
    roots = [f for f in frames if f[3] == max(y for *_, y in frames)]  # the bottom row
    assert abs(sum(w for _, _, w, _ in roots) - (WIDTH - 2 * PAD)) < 1.0 + len(roots)
    ut = [f for f in frames if f[0] == "ut_delay"]
    assert ut and all(PAD <= x and x + w <= WIDTH - PAD + 0.5 for _, x, w, _ in frames)


def test_size_is_bounded_on_a_long_tail():
    rng = random.Random(7)
    stacks = {}
    for _ in range(60000):
        depth = rng.randint(3, 30)
        stacks[("mariadbd",) + tuple(f"fn{rng.randint(0, 2000)}_{d}" for d in range(depth))] = rng.randint(1, 5)
    svg = flame_svg(Profile(stacks))
    frames = _frames(svg)
    assert len(frames) <= MAX_FRAMES and len(svg) < 2_000_000
    assert re.search(r"of [\d,]+ frames drawn", svg)


def test_report_writes_flame_svg_and_md_lists_every_finding(tmp_path):
    prof = profile()
    findings = [
        Finding(
            f"rule-{i}",
            ("critical", "warning", "info")[i % 3],
            f"Finding number {i}",
            0.3 - i / 100,
            process="mariadbd",
        )
        for i in range(7)
    ]
    paths = write_outputs(prof, Diagnosis.of(findings), tmp_path)
    assert paths["svg"] == tmp_path / "flame.svg" and paths["svg"].read_text().startswith("<svg")
    md = paths["md"].read_text()
    for f in findings:
        assert f"Finding number {f.title.split()[-1]}" in md
    assert "more in findings.json" not in md
    assert "![Flame graph](flame.svg)" in md and "[flame.svg](flame.svg)" in md

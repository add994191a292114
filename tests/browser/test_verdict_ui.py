"""The report's first screen at 1400×900, looked at in headless Chromium: the verdict, and its flame-graph link."""

from __future__ import annotations

import json
from pathlib import Path
from collections.abc import Iterator

import pytest
from cdp import Browser

from pmuprof.findings.engine import diagnose
from pmuprof.report import write_outputs
from rules.conftest import FIXTURES, load_fixture

WIDTH, HEIGHT = 1400, 900
RANGES = FIXTURES / "index-dive-cost" / "fire-mariadb102-ranges.folded"  # real MariaDB 10.2.11 capture
HEALTHY = FIXTURES / "healthy" / "mariadb102-point-select.folded"  # real healthy MariaDB 10.2.11
CAUSE_FRAME = "btr_estimate_n_rows_in_range_low"
MATCH_RGB = [0xD0, 0x5C, 0xE3]  # PMU_MATCH in flame_draw.js


def _report(directory: Path, fixture: Path) -> str:
    profile, _ = load_fixture(fixture)
    diagnosis = diagnose(profile)
    return write_outputs(profile, diagnosis, directory)["html"].as_uri()


@pytest.fixture(scope="module")
def screen(browser: Browser) -> Iterator[Browser]:
    """The session's browser at 1400×900, put back to its usual size afterwards."""
    browser.call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=HEIGHT, deviceScaleFactor=1, mobile=False)
    try:
        yield browser
    finally:
        browser.call("Emulation.setDeviceMetricsOverride", width=1200, height=900, deviceScaleFactor=1, mobile=False)


@pytest.fixture(scope="module")
def cause_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    return _report(tmp_path_factory.mktemp("verdict"), RANGES)


def load(b: Browser, url: str) -> None:
    b.open("about:blank")
    b.open(url)
    b.wait("!!window.pmuFlame")
    assert b.problems() == []


def box(b: Browser, selector: str) -> dict:
    """Where an element is in the viewport, and its text."""
    return b.js(
        f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return null;"
        " const r = e.getBoundingClientRect();"
        " return {top: r.top, bottom: r.bottom, left: r.left, width: r.width, height: r.height,"
        " text: e.textContent.replace(/\\s+/g, ' ').trim()}; })()"
    )


def on_first_screen(b: Browser, selector: str) -> str:
    """The element's text, after checking it is drawn wholly inside the 1400×900 viewport."""
    r = box(b, selector)
    assert r is not None, f"{selector} is not in the report"
    assert r["width"] > 0 and r["height"] > 0, f"{selector} is not drawn"
    assert 0 <= r["top"] and r["bottom"] <= HEIGHT, (
        f"{selector} is at y {r['top']:.0f}..{r['bottom']:.0f}, not on the first screen"
    )
    return r["text"]


def test_first_screen_holds_the_verdict(screen, cause_url):
    load(screen, cause_url)
    assert screen.js("window.scrollY") == 0 and screen.js("window.innerWidth") == WIDTH
    assert on_first_screen(screen, "#verdict h2") == "Optimizer index dives cost a large share of the CPU"
    assert on_first_screen(screen, "#verdict .badge") == "critical"
    assert on_first_screen(screen, "#verdict .verdict-share") == "66.4 % of mysqld samples"
    assert on_first_screen(screen, "#verdict .sentence").startswith("66.4% of mysqld samples estimate row counts")
    sure = on_first_screen(screen, "#verdict .confidence")
    assert "How sure: medium" in sure and "8,897 of 13,395 samples" in sure and "1.33× its threshold" in sure
    assert "confirmed by the server: 3 threads in processlist state 'statistics'" in sure
    assert "FORCE INDEX" in on_first_screen(screen, "#verdict .verdict-fix pre")
    assert "10.2.11-MariaDB" in on_first_screen(screen, "#verdict .verdict-fix h3")
    assert on_first_screen(screen, "#verdict a.open-flame") == f"Open in the flame graph: {CAUSE_FRAME}"
    assert on_first_screen(screen, "#verdict a[href='#findings']") == "2 more findings"
    # The host caveat is a chip; its text shows only when it is opened.
    assert on_first_screen(screen, "#verdict details.caveats summary") == "cpu-clock, not cycles"
    assert screen.js("document.querySelector('details.caveats ul').checkVisibility()") is False
    screen.click_selector("details.caveats summary")
    assert screen.js("document.querySelector('details.caveats ul').checkVisibility()") is True
    assert "perf recorded cpu-clock instead of cycles" in on_first_screen(screen, "details.caveats ul")


def test_open_in_flame_graph_zooms_and_highlights_the_cause(screen, cause_url):
    load(screen, cause_url)
    link = box(screen, "#verdict a.open-flame")
    screen.click(link["left"] + 20, (link["top"] + link["bottom"]) / 2)  # a real click on the first screen
    flame = "document.getElementById('flame')"
    screen.wait(f"{flame}.getAttribute('data-view') === 'sandwich'")
    assert screen.js(f"{flame}.getAttribute('data-focus')") == CAUSE_FRAME
    assert screen.js("document.querySelector('#flame input[type=search]').value") == f"^{CAUSE_FRAME}$"
    assert screen.js("location.hash") == screen.js("document.querySelector('a.open-flame').getAttribute('href')")
    assert screen.js(f"{flame}.getBoundingClientRect().top") < HEIGHT / 4  # scrolled to the graph
    assert (
        screen.js("document.querySelector('#flame .matched').textContent")
        == f"callers matched 100.00 % of {CAUSE_FRAME}; callees matched 100.00 % of {CAUSE_FRAME}"
    )
    pos = screen.wait(f"window.pmuFlame.locate({json.dumps(CAUSE_FRAME)}, 'callees')")
    rgb = screen.js(f"""(() => {{ const c = document.querySelector('#flame canvas'), r = c.getBoundingClientRect();
        const k = c.width / r.width, x = Math.round(({pos["x"]} - r.left) * k), y = Math.round(({pos["y"]} - r.top) * k);
        return Array.from(c.getContext('2d').getImageData(x, y, 1, 1).data).slice(0, 3); }})()""")
    assert rgb == MATCH_RGB, f"the cause's frame is drawn {rgb}, not in the search-match colour"
    assert "btr_estimate_n_rows_in_range_low: total 8,761 samples (65.41 %)" in screen.js(
        "window.pmuFlame.rootLabel(window.pmuFlame.panes[1])"
    )
    screen.history(-1)  # back: the graph as it was before the link
    screen.wait(f"{flame}.getAttribute('data-view') === 'icicle'")
    assert screen.problems() == []


def test_healthy_first_screen_says_so(screen, tmp_path):
    load(screen, _report(tmp_path, HEALTHY))
    assert on_first_screen(screen, "#verdict h2") == "No known problem found"
    said = on_first_screen(screen, "#verdict .sentence")
    # the busiest server function, then where the most self time went (here kernel work, under which call)
    assert said.startswith("No rule found a problem in these") and "most time in JOIN::" in said and "% self" in said
    assert "Metadata-lock (MDL) waits" in on_first_screen(screen, "#verdict p:nth-of-type(2)")
    assert on_first_screen(screen, "#verdict a.open-flame").startswith("Open ")

"""pmuprof demo --scenario spike: three seconds of index dives in the middle of a light load stand out in the
report's per-second strip, and dragging over them in headless Chromium redraws the flame graph for them."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from helpers import assert_host_load_and_thread_table, demo_cli, need_perf

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "browser"))
from cdp import Browser, chromium  # noqa: E402

DURATION = 10


@pytest.fixture(scope="module")
def spike_run(tmp_path_factory) -> Path:
    need_perf()
    out = tmp_path_factory.mktemp("spike") / "run"
    res = demo_cli(out, "--scenario", "spike", "-d", str(DURATION), "-q")
    assert res.returncode == 0, res.stderr
    return out


def _data(out: Path) -> dict:
    html = (out / "report.html").read_text(encoding="utf-8")
    return json.loads(re.search(r'id="pmuprof-data">(.*?)</script>', html, re.S).group(1))


def test_the_spike_stands_out_in_the_middle_of_the_strip(spike_run):
    data = _data(spike_run)
    sx = data["seconds"]
    n, top = sx["n"], sx["top"]
    # the strip ends at perf's last sample: perf samples until it handles SIGINT, seconds late on a loaded host
    assert DURATION <= len(n) <= 2 * DURATION and sx["cells"]
    assert "index dive" in sx["top_title"].lower(), sx["top_title"]
    hot = [s for s in range(len(n)) if top[s] > 0.3 * n[s]]
    assert hot and 2 <= hot[0] and hot[-1] <= len(n) - 3, (n, top)  # in the middle, not at either end
    assert 3 <= len(hot) <= 5 and hot == list(range(hot[0], hot[-1] + 1))  # one spike, about three seconds
    quiet = [s for s in range(1, len(n) - 1) if s not in range(hot[0] - 1, hot[-1] + 2)]
    assert quiet and all(top[s] <= 0.05 * n[s] for s in quiet)
    # (How many samples each second gets is the host's scheduling, not pmuprof's: on a loaded host the
    # flat-out seconds get no more CPU than the light ones. What pmuprof shows is what they were doing.)


def test_dragging_over_the_spike_redraws_the_flame_graph(spike_run):
    exe = chromium()
    if not exe:
        pytest.skip("no Chromium here (apt-get install chromium)")
    sx = _data(spike_run)["seconds"]
    hot = [s for s in range(len(sx["n"])) if sx["top"][s] > 0.3 * sx["n"][s]]
    b = Browser(exe)
    try:
        b.open((spike_run / "report.html").as_uri())
        b.wait("!!window.pmuSeconds")
        xy = b.js(
            "(() => { const c = document.querySelector('#sec-strip canvas'); c.scrollIntoView({block: 'center'});"
            " const r = c.getBoundingClientRect(); return [r.left, r.width, r.top + r.height / 2]; })()"
        )
        left, width, y = xy
        at = [left + (s + 0.5) / len(sx["n"]) * width for s in (hot[0], hot[-1])]
        b.mouse("mouseMoved", at[0], y)
        b.mouse("mousePressed", at[0], y, "left", 1)
        b.mouse("mouseMoved", at[1], y, "left")
        b.mouse("mouseReleased", at[1], y, "left", 1)
        b.wait(f"document.getElementById('sec-strip').getAttribute('data-range') === '{hot[0] + 1}-{hot[-1] + 1}'")
        total = sum(sx["n"][hot[0] : hot[-1] + 1])
        assert b.js("document.getElementById('flame').getAttribute('data-total')") == str(total)
        assert b.js("window.pmuFlame.locate('btr_estimate_n_rows_in_range', '')") is not None
        note = b.js("document.querySelector('#sec-strip .sec-note').textContent")
        top = int(re.search(r"top finding ([\d.]+) %", note).group(1).split(".")[0])
        assert top >= 40, note
        assert b.problems() == []
    finally:
        b.close()


def test_the_report_shows_the_host_load_card_and_the_thread_table(spike_run):
    assert_host_load_and_thread_table(spike_run)  # issue 23 item 4: host context and thread tables in the demos

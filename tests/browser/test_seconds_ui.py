"""The per-second strip driven with the mouse: dragging over seconds redraws the flame graph and the
thread/state/statement tables for those seconds only; "All seconds" brings the whole capture back. The
host's wall clock under it; the chosen seconds in the URL hash, and a link with them opens them."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from cdp import Browser

from pmuprof.model import rundir
from pmuprof.model.profile import Profile
from pmuprof.model.run import Clock, Run
from pmuprof.model.samples import from_keyed
from pmuprof.model.series import Series, SeriesSet
from pmuprof.model.stacks import Stacks
from pmuprof.findings.diagnosis import Diagnosis
from pmuprof.analysis import threads
from pmuprof.report import write_outputs

BASE = 5000  # the capture's first second (perf clock)
NORMAL = ("mariadbd", "start_thread", "do_command", "row_search_mvcc")
SPIKE = ("mariadbd", "start_thread", "do_command", "btr_estimate_n_rows_in_range", "ut_delay")
PURGE = ("mariadbd", "start_thread", "purge_worker")
SPIKE_SECONDS = (4, 5, 6)  # of 0..9


def _keyed() -> dict:
    keyed = {}
    for s in range(10):
        for tid in (101, 102):
            keyed[(NORMAL, tid, BASE + s)] = 20
        keyed[(PURGE, 300, BASE + s)] = 5
        if s in SPIKE_SECONDS:
            for tid in (101, 102):
                keyed[(SPIKE, tid, BASE + s)] = 90
    return keyed


def _processlist() -> str:
    lines = ["# pmuprof processlist: second\ttid\tid\tuser\tdb\tcommand\tstate\ttime\tdigest"]
    for s in range(10):
        for tid, cid in ((101, 7), (102, 8)):
            spike = s in SPIKE_SECONDS
            state = "statistics" if spike else "Sending data"
            digest = "SELECT COUNT(*) FROM t WHERE a IN (...)" if spike else "SELECT c FROM t WHERE id = ?"
            lines.append(f"{BASE + s}\t{tid}\t{cid}\tapp\tshop\tQuery\t{state}\t0\t{digest}")
    return "\n".join(lines) + "\n"


# The capture host's clocks read together: perf second BASE - 0.5 was 15:03:07 UTC, 16:03:07 in CET, so
# the strip's first second starts at 16:03:07.5 host time and the first whole-second tick is half a bar in.
EPOCH = datetime(2026, 11, 28, 15, 3, 7, tzinfo=timezone.utc).timestamp()
CLOCK = Clock(monotonic_s=BASE - 0.5, epoch_s=EPOCH, utc_offset_s=3600, zone="CET")


# What the capture's sources measured on the same clock: the run queue peaks in the spike; busy CPUs every
# second but the first (a rate needs two reads); a series of no source the strip knows is drawn the same way.
SERIES = SeriesSet(
    series=(
        Series(
            "host.busy",
            "host",
            "share",
            "all CPUs' busy time",
            True,
            BASE + 1,
            tuple(0.9 if s in SPIKE_SECONDS else 0.3 for s in range(1, 10)),
        ),
        Series(
            "host.runnable",
            "host",
            "tasks",
            "runnable tasks",
            True,
            BASE,
            tuple(12.0 if s in SPIKE_SECONDS else 2.0 for s in range(10)),
        ),
        Series("host.blocked", "host", "tasks", "not shown", False, BASE, (1.0,)),
        Series("io.read_bytes", "io", "bytes/s", "the target's reads", True, BASE + 4, (4096.0,)),
    )
)


def _strip(directory, run: Run | None = None, series: SeriesSet | None = None) -> str:
    keyed = _keyed()
    totals: dict = {}
    for (stack, _, _), n in keyed.items():
        totals[stack] = totals.get(stack, 0) + n
    stacks = Stacks.of(totals)
    (directory / rundir.PROCESSLIST).write_text(_processlist())
    profile = threads.attach(
        Profile(stacks, run or Run(), source=str(directory), samples=from_keyed(stacks, keyed), series=series)
    )
    return write_outputs(profile, Diagnosis(), directory)["html"].as_uri()


@pytest.fixture(scope="module")
def strip_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    return _strip(tmp_path_factory.mktemp("seconds"))


@pytest.fixture(scope="module")
def clock_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    return _strip(tmp_path_factory.mktemp("clock"), Run(started="2026-11-28T15:03:05Z", clock=CLOCK))


@pytest.fixture(scope="module")
def series_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    return _strip(tmp_path_factory.mktemp("series"), Run(started="2026-11-28T15:03:05Z", clock=CLOCK), SERIES)


STRIP = "document.getElementById('sec-strip')"


def load(b: Browser, url: str) -> None:
    b.open("about:blank")
    b.open(url)
    b.wait("!!window.pmuSeconds")
    assert b.problems() == []


def second_x(b: Browser, s: int) -> tuple[float, float]:
    """Viewport centre of second ``s``'s bar (the page scrolls the strip into view)."""
    return tuple(
        b.js(
            f"(() => {{ const c = {STRIP}.querySelector('canvas'); c.scrollIntoView({{block: 'center'}});"
            f" const r = c.getBoundingClientRect(); return [r.left + (({s} + 0.5) / 10) * r.width,"
            " r.top + r.height / 2]; })()"
        )
    )


def drag(b: Browser, first: int, last: int) -> None:
    """Press on one second's bar, move to another's, release: a person's drag."""
    x0, y = second_x(b, first)
    x1, _ = second_x(b, last)
    b.mouse("mouseMoved", x0, y)
    b.mouse("mousePressed", x0, y, "left", 1)
    b.mouse("mouseMoved", (x0 + x1) / 2, y, "left")
    b.mouse("mouseMoved", x1, y, "left")
    b.mouse("mouseReleased", x1, y, "left", 1)


def cell(b: Browser, table: str, key: str, column: str) -> str:
    return b.js(
        f"(() => {{ for (const tr of document.querySelectorAll(\"table.sec-table[data-table='{table}'] tbody tr\"))"
        f" if (tr.cells[0].textContent === {json.dumps(key)}) return tr.querySelector('.{column}').textContent;"
        " return null; })()"
    )


def test_strip_shows_the_spike_and_the_state_tables(browser, strip_url):
    load(browser, strip_url)
    data = browser.js("JSON.parse(document.getElementById('pmuprof-data').textContent)")
    assert data["seconds"]["n"] == [45 + (180 if s in SPIKE_SECONDS else 0) for s in range(10)]
    assert browser.js(f"{STRIP}.getAttribute('data-samples')") == str(sum(data["seconds"]["n"]))
    state = next(t for t in data["threads"]["tables"] if t["name"] == "state")
    stats = next(r for r in state["rows"] if r["key"] == "statistics")
    # in the spike seconds those threads ran 180 index-dive samples and 40 ordinary ones a second
    assert stats["function"] == "btr_estimate_n_rows_in_range" and stats["function_share"] == pytest.approx(180 / 220)
    assert "82 % of the samples of threads in statistics were in btr_estimate_n_rows_in_range" in browser.js(
        "document.querySelector('#threads').textContent"
    )  # the Markdown backticks are gone ...
    assert "<code>statistics</code>" in browser.js("document.querySelector('#threads').innerHTML")  # ... as <code>


def test_dragging_over_seconds_redraws_flame_and_tables(browser, strip_url):
    load(browser, strip_url)
    assert browser.js("window.pmuFlame.locate('ut_delay', '')") is not None
    drag(browser, 1, 2)  # two quiet seconds: no index dive in them
    browser.wait(f"{STRIP}.getAttribute('data-range') === '2-3'")
    assert browser.js(f"{STRIP}.getAttribute('data-samples')") == "90"
    assert browser.js("document.getElementById('flame').getAttribute('data-total')") == "90"
    assert browser.js("window.pmuFlame.locate('ut_delay', '')") is None
    assert browser.js("window.pmuFlame.locate('row_search_mvcc', '')") is not None
    assert cell(browser, "state", "statistics", "sec-n") == "0"
    assert cell(browser, "state", "Sending data", "sec-n") == "80"
    drag(browser, 6, 4)  # right to left works too: the spike's three seconds
    browser.wait(f"{STRIP}.getAttribute('data-range') === '5-7'")
    assert browser.js("document.getElementById('flame').getAttribute('data-total')") == str(3 * 225)
    assert cell(browser, "state", "statistics", "sec-n") == "660"  # both connections' samples in those seconds
    assert cell(browser, "state", "statistics", "sec-share") == f"{100 * 660 / 675:.1f} %"
    assert browser.js("document.querySelector('#sec-strip table.sec-top tbody tr td').textContent") == "ut_delay"
    assert "top finding" not in browser.js(f"{STRIP}.querySelector('.sec-note').textContent")  # none fired here
    browser.click_selector("#sec-strip button.sec-all")
    browser.wait(f"{STRIP}.getAttribute('data-range') === ''")
    assert browser.js("document.getElementById('flame').getAttribute('data-total')") == str(10 * 45 + 540)
    assert cell(browser, "state", "statistics", "sec-n") == "660"
    assert browser.problems() == []


def test_one_click_selects_one_second_and_the_view_survives(browser, strip_url):
    load(browser, strip_url)
    browser.click_selector("#flame button[data-view=inverted]")
    browser.wait("document.getElementById('flame').getAttribute('data-view') === 'inverted'")
    browser.click(*second_x(browser, 5))
    browser.wait(f"{STRIP}.getAttribute('data-range') === '6-6'")
    assert browser.js("document.getElementById('flame').getAttribute('data-view') === 'inverted'")
    assert browser.js("document.getElementById('flame').getAttribute('data-total')") == "225"
    assert cell(browser, "thread", "101 (connection 7, app)", "sec-n") == "110"
    assert cell(browser, "thread", "300", "sec-n") == "5"  # a background thread: no connection


def test_axis_shows_the_host_wall_clock(browser, clock_url):
    load(browser, clock_url)
    note = browser.js(f"{STRIP}.querySelector('.sec-clock').textContent")
    assert "second 1 starts at 16:03:07 on 2026-11-28" in note and "UTC+01:00, CET" in note
    assert note.startswith("Host time")  # exact: from the recorded clock pair, not the start time
    ticks = browser.js(
        f"Array.from({STRIP}.querySelectorAll('.sec-axis .sec-tick')).map(t => "
        "[t.textContent, t.getBoundingClientRect().left])"
    )
    left, width = browser.js(
        f"(() => {{ const r = {STRIP}.querySelector('canvas').getBoundingClientRect(); return [r.left, r.width]; }})()"
    )
    # every second on a 10 s strip (16:03:17, 9.5 bars in, is left out where its label would be cut)
    assert [t for t, _ in ticks][:9] == [f"16:03:{s:02d}" for s in range(8, 17)] and len(ticks) in (9, 10)
    assert ticks[0][1] - left == pytest.approx(0.5 * width / 10, abs=1.5)  # 16:03:08 is half a bar in
    assert ticks[5][1] - left == pytest.approx(5.5 * width / 10, abs=1.5)
    browser.mouse("mouseMoved", *second_x(browser, 3))
    assert "(16:03:10)" in browser.js(f"{STRIP}.querySelector('.sec-tip').textContent")


def test_ticks_space_out_on_long_captures(browser, clock_url):
    load(browser, clock_url)
    # a 10-minute capture on 1000 px: 30 s would put labels 50 px apart, so every minute, on the minute
    ticks = browser.js("pmuTicks({t0: 1795878187.5, offset: 3600}, 600, 1000)")
    assert len(ticks) == 10 and all(t["text"].endswith(":00") for t in ticks)
    assert [t["text"] for t in browser.js("pmuTicks({t0: 1795878187.5, offset: 3600}, 60, 1000)")][:3] == [
        "16:03:10",
        "16:03:15",
        "16:03:20",
    ]  # a minute: every 5 s
    assert browser.js("pmuTicks({t0: 1795878187.5, offset: -16200}, 4, 1000)")[0]["text"] == "10:33:08"  # UTC-04:30


def test_choosing_seconds_puts_them_in_the_url(browser, clock_url):
    load(browser, clock_url)
    drag(browser, 2, 4)
    browser.wait(f"{STRIP}.getAttribute('data-range') === '3-5'")
    assert browser.js("location.hash") == "#t=3-5"
    browser.click_selector("#flame button[data-view=inverted]")  # the flame graph's state joins it ...
    browser.wait("document.getElementById('flame').getAttribute('data-view') === 'inverted'")
    assert browser.js("location.hash") == "#view=inverted&t=3-5"
    drag(browser, 6, 6)  # ... and stays when the seconds change
    browser.wait(f"{STRIP}.getAttribute('data-range') === '7-7'")
    assert browser.js("location.hash") == "#view=inverted&t=7-7"
    browser.click_selector("#sec-strip button.sec-all")
    browser.wait(f"{STRIP}.getAttribute('data-range') === ''")
    assert browser.js("location.hash") == "#view=inverted"
    assert browser.problems() == []


def test_a_link_with_seconds_opens_them(browser, clock_url):
    load(browser, clock_url + "#t=5-7")
    assert browser.js(f"{STRIP}.getAttribute('data-range')") == "5-7"
    assert browser.js("document.getElementById('flame').getAttribute('data-total')") == str(3 * 225)
    assert cell(browser, "state", "statistics", "sec-n") == "660"
    load(browser, clock_url + "#view=inverted&t=2-3")  # with the flame graph's view: both come back
    assert browser.js(f"{STRIP}.getAttribute('data-range')") == "2-3"
    assert browser.js("document.getElementById('flame').getAttribute('data-view')") == "inverted"
    assert browser.js("document.getElementById('flame').getAttribute('data-total')") == "90"
    browser.js("location.hash = '#t=9'")  # typed into the address bar: one second
    browser.wait(f"{STRIP}.getAttribute('data-range') === '9-9'")
    for bad in ("#t=abc", "#t=0-0", "#t=11-40", "#t=%3Cscript%3E"):  # nothing chosen, nothing thrown
        load(browser, clock_url + bad)
        assert browser.js(f"{STRIP}.getAttribute('data-range')") == ""
    load(browser, clock_url + "#t=8-40")  # past the end: up to the last second
    assert browser.js(f"{STRIP}.getAttribute('data-range')") == "8-10"


def row_x(b: Browser, row: int, s: int) -> tuple[float, float]:
    """Viewport centre of second ``s`` in the ``row``-th series row under the strip."""
    return tuple(
        b.js(
            f"(() => {{ const c = {STRIP}.querySelectorAll('.sec-row-canvas')[{row}]; c.scrollIntoView({{block: 'center'}});"
            f" const r = c.getBoundingClientRect(); return [r.left + (({s} + 0.5) / 10) * r.width,"
            " r.top + r.height / 2]; })()"
        )
    )


def test_the_sources_series_are_drawn_under_the_strip_on_its_seconds(browser, series_url):
    """Each shown series is one row on the strip's seconds, whatever source kept it; hovering names its value
    in that second, and dragging across a row chooses seconds as the strip does."""
    load(browser, series_url)
    names = browser.js(f"Array.from({STRIP}.querySelectorAll('.sec-row-name')).map(e => e.textContent)")
    assert names == ["host.busy", "host.runnable", "io.read_bytes"]  # host.blocked is not shown
    heights = browser.js(
        f"Array.from({STRIP}.querySelectorAll('.sec-row-canvas')).map(c => {{ const x = c.getContext('2d');"
        " return [0, 5].map(s => { let n = 0; const w = c.width / 10, d = x.getImageData(Math.floor((s + 0.5) * w),"
        " 0, 1, c.height).data; for (let i = 3; i < d.length; i += 4) if (d[i] > 200) n++; return n; }); })"
    )
    assert heights[0][0] == 0 < heights[0][1]  # no busy value in the first second: nothing drawn
    assert heights[1][1] > 3 * heights[1][0] > 0  # the run queue's spike, scaled to its highest second
    browser.mouse("mouseMoved", *row_x(browser, 1, 5))
    tip = browser.js(f"{STRIP}.querySelector('.sec-tip').textContent")
    assert tip.startswith("second 6 of 10") and "; host.busy 90.0 %; host.runnable 12 tasks" in tip, tip
    assert "; io.read_bytes not measured" in tip
    x0, y = row_x(browser, 2, 1)
    x1, _ = row_x(browser, 2, 2)
    browser.mouse("mousePressed", x0, y, "left", 1)
    browser.mouse("mouseMoved", x1, y, "left")
    browser.mouse("mouseReleased", x1, y, "left", 1)
    browser.wait(f"{STRIP}.getAttribute('data-range') === '2-3'")
    assert browser.js("document.getElementById('flame').getAttribute('data-total')") == "90"
    assert browser.problems() == []

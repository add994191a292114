"""Text in the report looked at in headless Chromium: the MySQL-facts cards wrap long values at spaces
and commas (never one letter a line), and thread sentences show `code` spans as <code>, hostile names as text."""

from __future__ import annotations

from dataclasses import replace

import pytest
from cdp import Browser
from helpers import make_profile

from pmuprof.findings.diagnosis import Diagnosis
from pmuprof.model import rundir
from pmuprof.model.samples import from_keyed
from pmuprof.model.stacks import Stacks
from pmuprof.analysis import threads
from pmuprof.report import write_outputs

COMMENT = "Percona Server (GPL), Release 8.0.36-28, Revision 47601f19 built for x86_64-linux"
TOKEN = "ibdata1:12M;ibdata2:1024M;ibdata3:2048M:autoextend:max:65536M"  # 60 characters, no space
HOSTILE_STATE = "x`</p><script>window.pwned=1</script>`y` <b>"
MYSQL = {
    "reachable": True,
    "server": {"version": "8.0.36-28", "version_comment": COMMENT, "family": "percona"},
    "variables": {
        "innodb_spin_wait_pause_multiplier": "50",
        "innodb_adaptive_hash_index_parts": "8",
        "thread_handling": TOKEN,
        "innodb_sync_spin_loops": "30",
    },
    "processlist": {"threads": 20, "states": {"statistics": 12, "waiting for handler commit": 3}},
}
STACK = ("mysqld", "start_thread", "do_command", "btr_estimate_n_rows_in_range")


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> str:
    directory = tmp_path_factory.mktemp("text")
    keyed = {(STACK, 101, 7000 + s): 50 for s in range(3)}
    stacks = Stacks.of({STACK: 150})
    rows = "".join(f"{7000 + s}\t101\t7\tapp\tshop\tQuery\t{HOSTILE_STATE}\t0\tSELECT 1\n" for s in range(3))
    (directory / rundir.PROCESSLIST).write_text(
        "# pmuprof processlist: second\ttid\tid\tuser\tdb\tcommand\tstate\ttime\tdigest\n" + rows
    )
    base = make_profile({STACK: 150}, mysql=MYSQL, source=str(directory))
    profile = threads.attach(replace(base, stacks=stacks, samples=from_keyed(stacks, keyed)))
    return write_outputs(profile, Diagnosis(), directory)["html"].as_uri()


def _open(b: Browser, url: str) -> None:
    b.open("about:blank")
    b.open(url)
    b.wait("document.readyState === 'complete'")


# The lines an element's text takes: the distinct tops of its text's boxes (a grid cell's own height is
# its row's, so a short name beside a long value would count the value's lines).
LINES = """(el => { const r = document.createRange(); r.selectNodeContents(el);
  return new Set(Array.from(r.getClientRects()).filter(b => b.width > 0).map(b => Math.round(b.top))).size; })"""


def test_long_fact_values_wrap_at_spaces_not_letters(browser, url):
    _open(browser, url)
    dds = browser.js(
        "Array.from(document.querySelectorAll('#mysql dl.kv dd')).map(dd => [dd.textContent, "
        f"{LINES}(dd), dd.getBoundingClientRect().width])"
    )
    assert dds, "the facts cards have values"
    by_text = {t: (lines, width) for t, lines, width in dds}
    version = next(v for t, v in by_text.items() if COMMENT in t)
    token = by_text[TOKEN]
    # letter by letter, an 80-character value takes dozens of lines; wrapped at spaces, a few
    assert version[0] <= 5, f"version comment on {version[0]} lines ({version[1]:.0f} px wide)"
    assert token[0] <= 4, f"a 60-character token on {token[0]} lines ({token[1]:.0f} px wide)"
    assert all(w >= 100 for _, w in by_text.values()), "every value column keeps room for words"
    names = browser.js(
        "Array.from(document.querySelectorAll('#mysql dl.kv dt')).map(dt => [dt.textContent, " + LINES + "(dt)])"
    )
    for name, lines in names:
        assert lines <= 3, f"{name} on {lines} lines"  # a long variable name wraps at its underscores


def test_thread_sentence_shows_code_spans_and_hostile_state_as_text(browser, url):
    _open(browser, url)
    lead = "document.querySelector('#threads p.sec-lead')"
    assert browser.js("window.pwned === undefined")
    assert browser.js(f"{lead}.querySelectorAll('script, b').length") == 0
    assert browser.js(f"{lead}.querySelectorAll('code').length") >= 1
    assert "</p><script>window.pwned=1</script>" in browser.js(f"{lead}.textContent")
    assert browser.js(f"{lead}.textContent").startswith("100 % of the samples of threads in ")
    assert browser.problems() == []

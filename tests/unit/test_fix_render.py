"""Fix steps rendered apart: code in blocks of its language (HTML <pre>, report.md fences), notes as prose
outside them, and findings.json's typed steps (format 3) that read back into the same steps."""

from __future__ import annotations

import html as htmllib
import json
import re

import pytest
from rules.conftest import FIXTURES, load_fixture

from pmuprof.findings.engine import diagnose
from pmuprof.findings.steps import FixStep
from pmuprof.report import write_outputs

CAPTURES = [
    FIXTURES / "index-dive-cost" / "fire-mariadb102-ranges.folded",  # 10.2.11: one variant each
    FIXTURES / "connection-setup" / "fire-mariadb114-tls-churn.folded",  # notes, my.cnf, shell
    FIXTURES / "innodb-spin-wait" / "fire-fil-space-get.folded",
]
_PRE = re.compile(r'<figure class="fix-code"><figcaption>(.*?)</figcaption><pre><code[^>]*>(.*?)</code></pre>', re.S)
_FENCE = re.compile(r"^(`{3,})(\w*)\n(.*?)\n\1$", re.S | re.M)
LANG = {"sql": "sql", "my.cnf": "ini", "shell": "sh"}
CAPTION = {"sql": "SQL", "my.cnf": "my.cnf", "shell": "shell"}


@pytest.fixture(scope="module", params=CAPTURES, ids=[p.parent.name for p in CAPTURES])
def report(request, tmp_path_factory):
    profile, _ = load_fixture(request.param)
    diagnosis = diagnose(profile)
    paths = write_outputs(profile, diagnosis, tmp_path_factory.mktemp("fix"))
    steps = [s for f in diagnosis.findings for s in f.fix]
    assert {s.kind for s in steps} >= {"sql", "note"} or {s.kind for s in steps} >= {"shell", "note"}, steps
    return diagnosis, paths


def test_html_puts_each_code_step_in_its_own_labelled_pre_and_no_note_in_any(report) -> None:
    diagnosis, paths = report
    page = paths["html"].read_text(encoding="utf-8")
    blocks = [(htmllib.unescape(cap), htmllib.unescape(code)) for cap, code in _PRE.findall(page)]
    pres = [htmllib.unescape(code) for code in re.findall(r"<pre[^>]*>(.*?)</pre>", page, re.S)]
    notes = [
        (htmllib.unescape(who), htmllib.unescape(text))
        for who, text in re.findall(
            r'<p class="fix-note">(?:<span class="fix-for">(.*?):</span> )?(.*?)</p>', page, re.S
        )
    ]
    for f in diagnosis.findings:
        for step in f.fix:
            if step.code:
                caption = CAPTION[step.kind] + (f" · {step.applies_to}" if step.applies_to else "")
                assert (caption, step.text) in blocks, (caption, step.text)
            else:
                assert not [p for p in pres if step.text in p], step.text
                assert (step.applies_to, step.text) in notes, step


def test_report_md_fences_code_by_language_and_keeps_notes_out(report) -> None:
    diagnosis, paths = report
    text = paths["md"].read_text(encoding="utf-8")
    fences = [(lang, body) for _, lang, body in _FENCE.findall(text)]
    for f in diagnosis.findings:  # report.md gives the causes' fixes (a consequence is one line under its cause)
        for step in f.fix if not f.explained_by else ():
            if step.code:
                assert (LANG[step.kind], step.text) in fences, step
            else:
                assert not [b for _, b in fences if step.text in b], step.text


def test_findings_json_round_trips_the_steps(report) -> None:
    diagnosis, paths = report
    doc = json.loads(paths["json"].read_text(encoding="utf-8"))
    assert doc["format_version"] == 4
    for f, written in zip(diagnosis.findings, doc["findings"]):
        assert all(set(s) == {"kind", "text", "applies_to"} for s in written["fix"])
        assert tuple(FixStep(**s) for s in written["fix"]) == f.fix

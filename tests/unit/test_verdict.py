"""The first screen's verdict and the findings' evidence in words, from real captures (tests/rules/fixtures)."""

from __future__ import annotations

import json
from dataclasses import replace

from rules.conftest import FIXTURES, load_fixture

from pmuprof.findings.engine import diagnose
from pmuprof.findings.derived import NumaPlacement, SampleCount, WaitLatches
from pmuprof.findings.evidence import Fact
from pmuprof.findings.kinds.counters import Ratio
from pmuprof.findings.model import Declared, Finding
from pmuprof.findings.stackshare import LatchDetail, StackShare
from pmuprof.report import build_payload, write_outputs
from pmuprof.report.evidence import evidence_rows, levels_text, value_text
from pmuprof.report.verdict import flame_link, sentence

RANGES = FIXTURES / "index-dive-cost" / "fire-mariadb102-ranges.folded"  # MariaDB 10.2.11, spin delay 200
HEALTHY = FIXTURES / "healthy" / "mariadb1011-point-select.folded"  # Debian's MariaDB 10.11, point selects


def _payload(path):
    profile, headers = load_fixture(path)
    diagnosis = diagnose(profile)
    return build_payload(profile, diagnosis), headers, profile, diagnosis


def test_verdict_is_the_top_cause_with_its_share_confidence_fix_and_flame_link():
    payload, _, profile, _ = _payload(RANGES)
    v = payload.verdict
    first_cause = next(f for f in payload.findings if not f["explained_by"])
    assert not v["healthy"] and v["rule"] == first_cause["rule"] == "index-dive-cost"
    assert v["severity"] == "critical" and v["share"] == first_cause["share"] > 0.6
    assert v["sentence"].startswith("66.4% of mysqld samples estimate row counts for the optimizer")
    assert v["sentence"].endswith(".") and "←" not in v["sentence"]
    c = v["confidence"]
    assert c["level"] == "medium" and c["samples"] == "8,897 of 13,395 samples"
    assert c["margin"] == "1.33× its threshold of 50.0 %"
    assert c["checks"] == [
        {"kind": "seen", "text": "confirmed by the server: 3 threads in processlist state 'statistics'"}
    ]
    fix = "\n".join(s["text"] for s in v["fix"])
    assert v["server"] == "10.2.11-MariaDB" and "FORCE INDEX" in fix
    assert "eq_range_index_dive_limit = 100" not in fix  # 10.2.11 has no such variable: version-filtered
    assert {e["rule"] for e in v["explains"]} == {"fil-space-get-index-dive", "innodb-spin-wait"}
    assert v["more"] == len(payload.findings) - 1 == 2
    assert v["frame"] == "btr_estimate_n_rows_in_range_low" and v["frame"] in profile.inclusive_counts()
    assert v["link"] == (
        "#view=sandwich&focus=btr_estimate_n_rows_in_range_low&search=%5Ebtr_estimate_n_rows_in_range_low%24"
    )
    assert v["caveats"]["tags"] == ["cpu-clock, not cycles"]
    assert "perf recorded cpu-clock instead of cycles" in v["caveats"]["lines"][0]


def test_a_healthy_server_is_said_to_be_healthy_with_its_informational_findings():
    payload, headers, _, diagnosis = _payload(HEALTHY)
    assert headers["max-severity"] == "info" and diagnosis.findings  # info findings only
    v = payload.verdict
    assert v["healthy"] and [f["rule"] for f in v["info"]] == [f.rule for f in diagnosis.findings]
    assert v["hottest"] == "_raw_spin_unlock_irqrestore_[k]" and v["link"].startswith("#view=sandwich&focus=")
    assert (
        v["busy"]["function"] == "JOIN::optimize" and v["busy"]["leaf_entry"] == "__x64_sys_sendto"
    )  # not the IRQ frame
    from pmuprof.report.markdown import render_markdown

    # 2: the spin finding of an unnamed function that merely contains a PAUSE is gone (issue 31)
    assert "**Verdict: no known problem found** in 1,873 samples (2 informational findings below)." in render_markdown(
        payload
    )


def test_first_screen_html_holds_the_verdict_and_no_rule_variable_dump(tmp_path):
    profile, _ = load_fixture(RANGES)
    diagnosis = diagnose(profile)
    html = write_outputs(profile, diagnosis, tmp_path)["html"].read_text()
    head = html[html.index('<section id="verdict"') : html.index('<section id="summary"')]
    assert "Optimizer index dives cost a large share of the CPU" in head and "66.4 %" in head
    assert 'class="open-flame" href="#view=sandwich&amp;focus=btr_estimate_n_rows_in_range_low' in head
    assert "2 more findings" in head and "Fix for the detected server, 10.2.11-MariaDB" in head
    assert "Read this first" not in html  # the caveats are a chip now
    cards = html[html.index('<section id="findings"') : html.index('<section id="flamegraph"')]
    assert "hot_share" not in cards and "below False" not in cards and "0.557521" not in cards
    assert "optimizer range estimation (index dives) inside InnoDB" in cards
    assert "66.4 % of samples (8,897 samples)" in cards
    raw = json.loads((tmp_path / "findings.json").read_text())
    assert raw["findings"][0]["evidence"]["dive"]["hot_share"] == 0.557521  # raw values stay in findings.json
    assert "shown" not in raw["findings"][0]
    md = (tmp_path / "report.md").read_text()
    assert md.splitlines()[2].startswith(
        "**Verdict: Optimizer index dives cost a large share of the CPU** — 66.4 % "
        "of mysqld samples (how sure: medium; 8,897 of 13,395 samples;"
    )


def test_evidence_values_in_words_per_kind():
    def text(kind, what, value, name="x"):
        return value_text(Declared(name, kind, what), value)

    assert (
        text("stack", "", StackShare(value=0.664203, share=0.664203, count=8897, hot="f"))
        == "66.4 % of samples (8,897 samples)"
    )
    assert text("stack", "", StackShare(value=0.0, share=0.0, count=0, hot=None)) == "none (0 samples)"
    latch = LatchDetail(modes={"X": 228}, mode="X", kinds={"spin": 228}, modes_text="X 100%")
    assert (
        text("latch", "", StackShare(value=0.017021, share=0.017021, count=228, hot="f", latch=latch))
        == "1.7 % of samples (228 samples); modes: X 100%"
    )
    assert (
        text("counter_ratio", "instructions / cycles", Ratio(0.1, "instructions", 2e9, "cycles", 2e10))
        == "0.10 (instructions 2,000,000,000 / cycles 20,000,000,000)"
    )
    assert text("processlist_state", "statistics", Fact(3.0, 3.0)) == "3 threads"
    assert text("quality", "truncated_share", Fact(0.934, 0.934)) == "93.4 % of samples"
    assert text("variable", "innodb_adaptive_hash_index", Fact("ON", 1.0)) == "ON"
    assert text("variable", "innodb_buffer_pool_size", Fact(134217728, 134217728.0)) == "134,217,728"
    waits = WaitLatches(0.5, 0.6, 0.5, "lock_sys mutex 40.0%", "lock_sys mutex", 0.4)
    assert text("derived", "wait_latches", waits) == "lock_sys mutex 40.0%"
    assert text("derived", "wait_latches", replace(waits, summary=""), "x_share") == "50.0 % of samples"
    numa = NumaPlacement(0.25, 0.25, 2, ("0",), False, ("0", "1"), 0)
    assert text("derived", "numa_placement", numa) == "runs on node(s) 0 of 2; remote memory 25.0 %"
    assert text("derived", "samples", SampleCount(12345)) == "12,345 samples"
    assert text("mysql", "error_log.memory_barrier", None) == "not recorded"
    assert text("host", "hardware_pmu", Fact(False, 0.0)) == "no"


def test_evidence_rows_follow_the_rule_declaration_and_levels_are_worded():
    _, _, _, diagnosis = _payload(RANGES)
    top = diagnosis.findings[0]
    rows = evidence_rows(top)
    assert [r["name"] for r in rows] == [d.name for d in top.declared]
    assert rows[0]["about"].startswith("optimizer range estimation (index dives) inside InnoDB")
    assert rows[0]["chains"][0].startswith("btr_estimate_n_rows_in_range_low 55.8% ← ha_innobase::records_in_range")
    assert levels_text(top) == "Levels on dive: info from 10.0 %, warning from 25.0 %, critical from 50.0 %"
    bare = Finding("r", "info", "t", 0.1, evidence={"flag": Fact(True, 1.0)})  # built without its rule
    assert evidence_rows(bare) == [{"name": "flag", "about": "flag", "text": "yes", "chains": []}]


def test_sentence_and_flame_link_edge_cases():
    f = {
        "title": "T",
        "share": 0.25,
        "chain": ["a<b>"],
        "message": "a<b> 25.0% ← c — threads are busy (e.g. here). More.",
    }
    assert sentence(f) == "Threads are busy (e.g. here)."
    assert sentence({"title": "Low IPC", "share": 0.0, "message": ""}) == "Low IPC: 0.0 % of the samples."
    assert flame_link("ns::f(int)&x") == "#view=sandwich&focus=ns%3A%3Af(int)%26x&search=%5Ens%3A%3Af%5C(int%5C)%26x%24"


def test_a_wait_s_margin_says_the_measurement_and_names_the_threshold_as_one():
    """The first screen once printed "3.42× its threshold (2 threads blocked on average)" beside 6.83 threads
    in the body: the threshold read as the measurement."""
    conf = {"margin": 3.42, "threshold": 2.0, "value": 6.8312, "unit": "threads", "blocked_s": 44.0, "level": "high"}
    from pmuprof.report.verdict import confidence_parts, margin_text

    assert confidence_parts(conf)["margin"] == "6.83 threads blocked on average, 3.42× its threshold of 2"
    assert margin_text({**conf, "value": None}) == "3.42× its threshold of 2 threads blocked on average"
    assert margin_text(conf, "x").startswith("6.83 threads blocked on average, 3.42x its threshold of 2")

"""Report payload, findings.json contract, ticket text and the compact flame tree."""

from __future__ import annotations

import json

from report_fixtures import HOSTILE_SCRIPT, findings, profile

from pmuprof.model.counters import Counters
from pmuprof.model.jsontypes import from_json
from pmuprof.model.profile import Profile
from pmuprof.model.run import Trigger
from pmuprof.report.facts import trigger_text
from pmuprof.report.markdown import _text as _md_text
from pmuprof.findings.diagnosis import Diagnosis
from pmuprof.report import build_payload, findings_json, write_outputs
from pmuprof.report.counters import counter_rows
from pmuprof.report.flame import KIND_KERNEL, KIND_PROCESS, KIND_UNNAMED, KIND_USER, build_tree
from pmuprof.report.markdown import render_markdown


def test_findings_json_contract_and_order():
    doc = json.loads(findings_json(profile(), Diagnosis.of(findings())))
    assert set(doc) == {
        "format_version",
        "pmuprof_version",
        "host",
        "captured_at",
        "verdict",
        "profile",
        "findings",
        "latches",
    }
    assert doc["format_version"] == 4
    top = Diagnosis.of(findings()).top
    assert doc["verdict"] == {
        "status": "problem",
        "rule": top.rule,
        "title": top.title,
        "severity": top.severity,
        "share": top.share,
        "process": top.process,
        "who": "mariadbd pid 123: MariaDB 10.11.6-MariaDB",  # report/who.py: which server process it is
    }
    prof = doc["profile"]
    assert prof["samples"] == profile().total
    assert prof["event"] == "cpu-clock" and prof["event_requested"] == "cycles"
    assert prof["process"] == "mariadbd"
    assert [f["rule"] for f in doc["findings"]] == ["innodb-spin-wait", "info-rule"]  # severity first
    first = doc["findings"][0]
    for key in ("rule", "severity", "title", "share", "evidence", "fix", "references"):
        assert key in first
    assert 0 <= first["share"] <= 1


def test_findings_json_says_healthy_or_empty_and_what_it_does_not_know():
    healthy = json.loads(findings_json(profile(), Diagnosis.of(f for f in findings() if f.severity == "info")))
    assert healthy["verdict"]["status"] == "healthy" and healthy["verdict"]["rule"] is None
    empty = json.loads(findings_json(Profile({}), Diagnosis.of([])))
    assert empty["verdict"]["status"] == "empty"
    assert empty["host"] is None and empty["captured_at"] is None  # a bare input: unknown, never ""


def test_payload_summary_top_functions_counters():
    p = build_payload(profile(), Diagnosis.of(findings()))
    s = p.summary
    assert s["event_substituted"] and "cpu-clock instead of cycles" in s["warnings"][0]
    assert s["features_off"][0]["feature"] == "hardware counters"
    allrows = {r["name"]: r for r in p.top_functions[0]["rows"]}
    total = profile().total
    assert allrows["ut_delay"]["self"] == 600
    assert abs(allrows["ut_delay"]["self_share"] - 600 / total) < 1e-6
    assert allrows["do_command"]["self"] == 0 and allrows["do_command"]["inclusive"] == 940
    assert [g["process"] for g in p.top_functions] == ["", "mariadbd", "mariadbd-2"]
    assert p.counters["ipc"] == {"mariadbd": 0.5, "mariadbd-2": 1.5}
    assert p.counters["multiplexed"] is True
    assert p.instruction_hotspots[0]["corrected_total"] == 100
    assert p.mysql["variables"][0] == ("innodb_spin_wait_delay", "30")
    assert p.mysql["states"][0] == ("statistics", 12)


def test_comparison_rows_have_numa_and_ipc():
    rows = build_payload(profile(), Diagnosis()).comparison
    assert [r["process"] for r in rows] == ["mariadbd", "mariadbd-2"]
    assert rows[0]["numa"] == "CPUs 0-7 (node 0); memory node0 75 %, node1 25 %"
    assert rows[1]["ipc"] == 1.5 and rows[1]["top"][0]["name"] == "ut_delay"


def test_single_process_has_no_comparison():
    one = Profile({("mysqld", "f"): 3}, source="x.folded")
    p = build_payload(one, Diagnosis())
    assert p.comparison == [] and len(p.top_functions) == 1
    assert p.mysql["reachable"] is False


def test_counter_rows_show_multiplexing_and_ipc():
    counters = from_json(
        Counters,
        {
            "events": [
                {"event": "cycles:u", "value": 2000, "running_pct": 50.0},
                {"event": "instructions:u", "value": 3000, "running_pct": 100.0},
                {"event": "LLC-load-misses", "supported": False, "status": "<not counted>"},
            ]
        },
    )
    rows = counter_rows(counters)
    assert rows[0]["multiplexed"] and not rows[1]["multiplexed"]
    assert rows[2]["value"] is None and rows[2]["note"] == "not counted"
    assert counters.ipc_by_process() == {"": 1.5}


def test_flame_tree_is_preorder_with_sums_and_kinds():
    tree = build_tree([{("p", "a", "b"): 2, ("p", "a"): 1, ("p", "k_[k]"): 4, ("p", "[unknown]"): 1}])
    names = [tree["names"][i] for i in tree["name"]]
    assert names == ["p", "[unknown]", "a", "b", "k_[k]"]
    assert tree["depth"] == [0, 1, 1, 2, 1]
    assert tree["values"][0] == [8, 1, 3, 2, 4]
    kinds = dict(zip(tree["names"], tree["kinds"]))
    assert kinds == {"p": KIND_PROCESS, "[unknown]": KIND_UNNAMED, "a": KIND_USER, "b": KIND_USER, "k_[k]": KIND_KERNEL}


def test_flame_tree_prunes_to_max_nodes_keeping_totals():
    stacks = {("p", f"f{i}", f"g{i}"): 1000 if i == 0 else 1 for i in range(500)}
    tree = build_tree([stacks], max_nodes=50)
    assert len(tree["name"]) <= 50 and tree["pruned"] > 0
    assert tree["values"][0][0] == sum(stacks.values())  # the root still counts everything


def test_markdown_ticket_text(tmp_path):
    paths = write_outputs(profile(), Diagnosis.of(findings()), tmp_path)
    assert set(paths) == {"html", "json", "md", "svg"}
    text = paths["md"].read_text(encoding="utf-8")
    assert "[CRITICAL]" in text and "SET GLOBAL innodb_spin_wait_delay = 6;" in text
    assert "cpu-clock (asked for cycles)" in text
    # Outside code spans, markup is escaped for Markdown renderers that allow raw HTML.
    assert text.replace(f"`{HOSTILE_SCRIPT}`", "").count(HOSTILE_SCRIPT) == 0
    assert "Spinning in ut_delay &lt;/script>&lt;img" in text
    assert (
        _md_text("srv_sys->mutex; PolicyMutex<T>; a &amp; b\n> q")
        == "srv_sys->mutex; PolicyMutex&lt;T>; a &amp;amp; b\n\\> q"
    )
    assert render_markdown(build_payload(profile(), Diagnosis())).count("No rule fired") == 1


def test_watch_trigger_is_said_in_the_summary():
    trigger = {
        "condition": "Threads_running>=4",
        "consecutive_hits": 3,
        "fired_at": "2026-11-21T14:14:01Z",
        "polls_before": [
            {"t": 1.0 + i, "values": {"Threads_running>=4": v}} for i, v in enumerate((1.0, 6.0, 6.0, 9.0))
        ],
    }
    text = trigger_text(from_json(Trigger, trigger))
    assert text == "Threads_running>=4 held for 3 polls (6, 6, 9) at 2026-11-21T14:14:01Z"
    assert trigger_text(None) == ""

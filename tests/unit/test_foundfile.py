"""findings.json read back (history, the fleet): each finding checked, a damaged one left out with a note."""

from __future__ import annotations

import math

import pytest

from pmuprof.model.foundfile import FoundFinding, found_findings, share_value


def test_a_sound_document_reads_in_order() -> None:
    notes: list[str] = []
    doc = {
        "findings": [
            {"rule": "a", "severity": "critical", "title": "A", "share": 0.4},
            {"rule": "b", "severity": "info", "title": "B"},
        ]
    }
    found, whole = found_findings(doc, notes)
    assert found == (FoundFinding("a", "critical", "A", 0.4), FoundFinding("b", "info", "B", 0.0)) and whole
    assert not notes and found[0].as_json() == doc["findings"][0]


@pytest.mark.parametrize("value", ["0.3", True, math.nan, -0.1, 1.5, [0.2]])
def test_a_damaged_share_is_never_zero(value) -> None:
    assert share_value(value) is None
    notes: list[str] = []
    found, whole = found_findings(
        {
            "findings": [
                {"rule": "a", "severity": "warning", "share": value},
                {"rule": "b", "severity": "warning", "share": 0.2},
            ]
        },
        notes,
    )
    assert [f.rule for f in found] == ["b"] and not whole
    (note,) = notes
    assert note.startswith("findings.json damaged: a has share")


def test_an_unknown_severity_is_left_out_with_a_note() -> None:
    notes: list[str] = []
    found, whole = found_findings({"findings": [{"rule": "a", "severity": "severe", "share": 0.2}]}, notes)
    assert found == () and not whole and "severity 'severe'" in notes[0]


@pytest.mark.parametrize("doc", [None, [], "x", {"findings": "x"}, {"findings": [1, None]}])
def test_not_a_findings_document_is_no_findings(doc) -> None:
    assert found_findings(doc, []) == ((), True)

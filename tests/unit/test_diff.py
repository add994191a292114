"""diff: normalised share deltas per function, differential flame graph page, the diff command."""

from __future__ import annotations

import json

import pytest
from report_fixtures import HOSTILE_SCRIPT, profile

from pmuprof.errors import InputError
from pmuprof.model.folded import save_folded
from pmuprof.model.profile import Profile
from pmuprof.report.diff import diff_json, diff_payload, diff_profiles, write_diff


def test_shrinking_ut_delay_is_negative_and_shares_are_normalised():
    before, after = profile(spin=500, source="before"), profile(spin=50, source="after")
    result = diff_profiles(before, after)
    row = result.row("ut_delay")
    assert row.self_before == pytest.approx(600 / before.total)
    assert row.self_after == pytest.approx(150 / after.total)
    assert row.self_delta < -0.3 and row.incl_delta < -0.3
    grown = result.row("row_search_mvcc")
    assert grown.incl_delta > 0  # same samples, bigger share of a smaller profile
    assert result.biggest("self")[0].name == "ut_delay"


def test_single_roots_with_different_names_are_matched():
    a = Profile({("mysqld", "f"): 10, ("mysqld", "g"): 10})
    b = Profile({("mariadbd", "f"): 5, ("mariadbd", "g"): 15})
    result = diff_profiles(a, b)
    assert result.notes and "mysqld" in result.notes[0]
    assert result.row("f").incl_delta == pytest.approx(-0.25)
    tree = diff_payload(result)["flame"]
    assert [tree["names"][n] for i, n in enumerate(tree["name"]) if tree["depth"][i] == 0] == ["mariadbd"]


def test_empty_side_is_an_input_error():
    with pytest.raises(InputError):
        diff_profiles(Profile({}), Profile({("p", "f"): 1}))


def test_diff_flame_tree_has_both_columns():
    payload = diff_payload(diff_profiles(profile(500), profile(50)))
    tree = payload["flame"]
    assert len(tree["values"]) == 2 and tree["totals"] == [profile(500).total, profile(50).total]
    idx = [i for i, n in enumerate(tree["name"]) if tree["names"][n] == "ut_delay" and tree["depth"][i] == 6][0]
    assert (tree["values"][0][idx], tree["values"][1][idx]) == (500, 50)


def test_write_diff_is_self_contained_and_deterministic(tmp_path):
    result = diff_profiles(profile(500), profile(50))
    paths = write_diff(result, tmp_path / "a")
    write_diff(diff_profiles(profile(500), profile(50)), tmp_path / "b")
    text = paths["diff.html"].read_text(encoding="utf-8")
    assert (tmp_path / "b" / "diff.html").read_text(encoding="utf-8") == text
    assert "<img" not in text and "default-src 'none'" in text
    assert "ut_delay" in text and "delta-down" in text
    doc = json.loads(diff_json(result))
    assert doc["self"][0]["name"] == "ut_delay" and doc["self"][0]["self_delta"] < 0
    assert any(r["name"] == HOSTILE_SCRIPT for r in doc["self"])


def test_diff_command_on_folded_files(tmp_path):
    from pmuprof.cli.main import main

    save_folded(tmp_path / "a.folded", profile(500).stacks)
    save_folded(tmp_path / "b.folded", profile(50).stacks)
    assert main(["diff", str(tmp_path / "a.folded"), str(tmp_path / "b.folded"), "-o", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "diff.html").is_file() and (tmp_path / "out" / "diff.json").is_file()

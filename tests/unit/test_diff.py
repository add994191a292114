"""diff: normalised share deltas per function, differential flame graph page, the diff command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from report_fixtures import HOSTILE_SCRIPT, profile

from pmuprof.errors import InputError
from pmuprof.model.folded import save_folded
from pmuprof.model.profile import Profile
from pmuprof.report.diff import diff_json, diff_payload, diff_profiles, write_diff
from pmuprof.report.noise import share_change, wilson


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


PURGE = Path(__file__).parent / "data" / "purge-threads"  # real MariaDB 10.2.11 captures (README.md there)


@pytest.mark.parametrize(
    "before, n1, after, n2, low, high",
    [  # Newcombe (1998), Table II, method 10
        (48, 80, 56, 70, 0.0524, 0.3339),
        (3, 10, 9, 10, 0.1705, 0.8090),
        (2, 7, 6, 7, 0.0582, 0.8062),
        (0, 29, 5, 56, -0.0381, 0.1926),
    ],
)
def test_change_interval_is_newcombes_hybrid_score(before, n1, after, n2, low, high):
    assert share_change(before, n1, after, n2) == pytest.approx((low, high), abs=5e-5)
    assert wilson(0, 10) == pytest.approx((0.0, 0.2775), abs=5e-5)


def test_unequal_sides_warn_and_a_small_change_is_noise():
    # the case: 9,870 samples against 1,322; one function +0.3 points, another -21 points
    before = Profile({("mysqld", "f"): 493, ("mysqld", "ut_delay"): 2566, ("mysqld", "rest"): 6811})
    after = Profile({("mysqld", "f"): 70, ("mysqld", "ut_delay"): 66, ("mysqld", "rest"): 1186})
    result = diff_profiles(before, after)
    assert result.warnings == (
        "the sides have 9,870 and 1,322 samples (7.5×): the smaller one sets the noise; at 10 % a change under "
        "1.7 points is sampling noise",
    )
    f, spin = result.row("f"), result.row("ut_delay")
    assert (
        round(100 * f.self_delta, 1) == 0.3 and not f.self_outside_noise and f.self_interval[0] < 0 < f.self_interval[1]
    )
    assert spin.self_outside_noise and spin.self_interval[1] < -0.19
    doc = json.loads(diff_json(result))
    assert doc["warnings"] == list(result.warnings) and doc["significance"]["confidence"] == 0.95
    row = next(r for r in doc["self"] if r["name"] == "f")
    assert row["self_outside_noise"] is False and row["self_interval"][0] < 0 < row["self_interval"][1]


def test_real_diff_says_which_changes_are_noise(tmp_path):
    from pmuprof.cli.main import main

    assert main(["diff", str(PURGE / "0-purge4"), str(PURGE / "3-purge1"), "-o", str(tmp_path / "d")]) == 0
    doc = json.loads((tmp_path / "d" / "diff.json").read_text())
    rows = {r["name"]: r for r in doc["self"]}
    assert rows["ut_delay"]["self_outside_noise"] and rows["ut_delay"]["self_delta"] < -0.16
    assert not rows["_raw_spin_unlock_irqrestore_[k]"]["self_outside_noise"]  # +1.6 points of 874 vs 653 samples
    assert [w.split(" has only")[0] for w in doc["warnings"]] == ["BEFORE", "AFTER"]  # 874 and 653 samples
    md = (tmp_path / "d" / "diff.md").read_text()
    assert "| `ut_delay` | 32.84 % | 16.54 % | -16.30 | -20.44 … -12.00 | **outside the noise** |" in md
    assert "| `_raw_spin_unlock_irqrestore_[k]` | 9.38 % | 11.03 % | +1.64 | -1.39 … +4.81 | sampling noise |" in md
    html = (tmp_path / "d" / "diff.html").read_text()
    assert (
        'data-fn="ut_delay" class="real"' in html and 'data-fn="_raw_spin_unlock_irqrestore_[k]" class="noise"' in html
    )
    assert "BEFORE has only 874 samples" in html

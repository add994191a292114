"""FrameTable (model/frametable.py): a frame table as one string answers as the tuple of names it replaces
(issue 34: 2 M names were 184 MiB of Python strings), and what sorts or matches it sees the same names."""

from __future__ import annotations

import pickle
import random

import numpy as np
import pytest

from pmuprof.findings.patterns import FrameNames, PatternSet
from pmuprof.model import frametable
from pmuprof.model.frametable import FrameTable
from pmuprof.model.stacks import Stacks
from pmuprof.report.flamebuild import _ranked
from pmuprof.report.flametrie import Trie


def _names(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    pool = ["ut_delay", "mutex_enter_func", "do_command", "schedule_[k]", "Foo<Bar<int> >::run(int)", "[unknown]"]
    out = [rng.choice(pool) + (f"_{rng.randint(0, n // 3)}" if rng.random() < 0.8 else "") for _ in range(n)]
    return out + ["", "x" * 1500, "tmpl<a> >::f_[k]"]


@pytest.mark.parametrize("block", [3, 64, 1 << 16])
def test_a_table_answers_as_its_tuple(monkeypatch, block) -> None:
    monkeypatch.setattr(frametable, "_BLOCK", block)
    names = _names(block, 500)
    table = FrameTable.of(names)
    assert isinstance(table, FrameTable) and len(table) == len(names) and list(table) == names
    assert [table[i] for i in range(-len(names), len(names))] == names + names
    assert table[3:40:7] == names[3:40:7] and table == tuple(names) and table == names
    for bad in (len(names), -len(names) - 1):
        with pytest.raises(IndexError):
            table[bad]
    assert pickle.loads(pickle.dumps(table)) == table
    want = np.argsort(np.array(names, dtype=object), kind="stable")  # duplicates included: by id
    assert np.array_equal(table.order, want)
    assert FrameTable.of(["ascii", "naïve"]) == ("ascii", "naïve") and not isinstance(
        FrameTable.of(["naïve"]), FrameTable
    )


def test_names_holding_a_piece_are_found_in_the_text() -> None:
    """Every place a piece starts, overlapping ones too; a place that runs on into the next name is not a hit
    of either (the names are not separated in the text)."""
    names = ["a", "aa", "xa", "ab", "", "aaa", "b", "abab"]
    table = FrameTable.of(names)
    assert isinstance(table, FrameTable)
    for piece in ("aa", "ab", "ba", "a", "bab", "abab", "zz", "aab"):
        want = [i for i, n in enumerate(names) if piece in n]
        assert table.containing(piece).tolist() == want, piece


@pytest.mark.parametrize("block", [5, 1 << 16])
def test_matching_and_sorting_see_the_names_the_tuple_gives(monkeypatch, block) -> None:
    """FrameNames of a table (a few names changed by normalizing, placed where they now sort) and the flame
    trie's ranks are those of the same names as a tuple."""
    monkeypatch.setattr(frametable, "_BLOCK", block)
    names = list(dict.fromkeys(_names(7, 400)))  # a frame table's names are distinct
    table = FrameTable.of(names)
    mine, theirs = FrameNames.of(table), FrameNames.of(tuple(names))
    assert list(mine.names) == list(theirs.names) and np.array_equal(mine.order, theirs.order)
    pats_tried = (["ut_delay*"], ["*enter*"], ["schedule"], ["Foo<Bar<int>>::run"], ["*<int>>::run*"], ["*_[k]"])
    for pats in pats_tried + (["*>::f"], ["re:_1[0-9]$"], ["*"], ["*mand_1*"], ["*_1_*"]):
        ps = PatternSet.of(pats)
        assert ps.mask(mine).tolist() == ps.mask(theirs).tolist() == [ps.matches(f) for f in names], pats
    frames, ranks = _ranked([table])
    want_frames, want_ranks = _ranked([tuple(names)])
    assert list(frames) == list(want_frames) and np.array_equal(ranks[0], want_ranks[0])
    stacks = {("p", names[i], names[(i * 7) % len(names)]): i + 1 for i in range(len(names))}
    plain = Stacks.of(stacks)
    compact = Stacks(FrameTable.of(plain.frames), plain.ids, plain.offsets, plain.counts)
    one, two = Trie.of([plain]), Trie.of([compact])
    assert list(one.frames) == list(two.frames) and np.array_equal(one.frame, two.frame)
    assert np.array_equal(one.values, two.values)

"""The per-second strip (report/seconds.py) and the thread tables' cells (analysis/threads.py) are
summed a block of sample-table entries at a time: the same answer whatever the block size, and the
(tree row, second) cells give up past their cap instead of growing."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from pmuprof.analysis import threads
from pmuprof.model import samples as samples_mod
from pmuprof.model.profile import Profile
from pmuprof.model.samples import Samples
from pmuprof.model.stacks import Stacks
from pmuprof.findings.diagnosis import Diagnosis
from pmuprof.report import seconds
from pmuprof.report.flame import build_tree_rows


def _profile(seed: int = 5) -> tuple[Profile, Counter]:
    rng = random.Random(seed)
    stacks: dict = {}
    keyed: Counter = Counter()
    for _ in range(600):
        stack = ("mysqld", *(f"f{rng.randint(0, 12)}" for _ in range(rng.randint(1, 6))))
        tid, sec = rng.choice([101, 102, 103, 4000]), rng.choice([-1, 50, 51, 53, 60])
        n = rng.randint(1, 9)
        stacks[stack] = stacks.get(stack, 0) + n
        keyed[(stack, tid, sec)] += n
    st = Stacks.of(stacks)
    index = {s: i for i, s in enumerate(st)}
    rows, tids, secs = zip(*((index[s], t, x) for s, t, x in keyed))
    return Profile(st, samples=Samples.build(rows, tids, secs, list(keyed.values()))), keyed


@pytest.mark.parametrize("block", [1 << 18, 7, 1])
def test_strip_is_the_same_whatever_the_block(monkeypatch, block):
    profile, keyed = _profile()
    _, tree_rows = build_tree_rows([profile.stacks], max_nodes=30)  # pruned: rows land in elided frames too
    monkeypatch.setattr(seconds, "BLOCK", block)
    monkeypatch.setattr(samples_mod, "BLOCK", block)
    got = seconds.strip(profile, Diagnosis(), tree_rows)
    per_sec: Counter = Counter()
    cells: Counter = Counter()
    rows = {s: i for i, s in enumerate(profile.stacks)}
    for (stack, _tid, sec), n in keyed.items():
        if sec >= 0:
            per_sec[sec - 50] += n
            cells[(int(tree_rows[rows[stack]]), sec - 50)] += n
    assert got["first"] == 50 and got["n"] == [per_sec[i] for i in range(11)]
    assert got["untimed"] == sum(n for (_, _, sec), n in keyed.items() if sec < 0)
    c = got["cells"]
    assert dict(zip(zip(c["node"], c["sec"]), c["n"])) == dict(cells)
    assert list(zip(c["node"], c["sec"])) == sorted(cells)


def test_cells_past_the_cap_are_left_out(monkeypatch):
    profile, _ = _profile()
    _, tree_rows = build_tree_rows([profile.stacks])
    monkeypatch.setattr(seconds, "BLOCK", 5)
    monkeypatch.setattr(samples_mod, "BLOCK", 5)
    monkeypatch.setattr(seconds, "MAX_CELLS", 10)
    got = seconds.strip(profile, Diagnosis(), tree_rows)
    assert got["cells"] is None and sum(got["n"]) > 0


@pytest.mark.parametrize("block", [1 << 18, 3, 1])
def test_thread_table_cells_whatever_the_block(monkeypatch, block):
    """The thread table's (row, second) cells, merged a block of entries at a time (the sample
    table's cells, as the strip's); and the grouping of thread ids without a sort."""
    profile, keyed = _profile()
    monkeypatch.setattr(samples_mod, "BLOCK", block)
    out = threads.tables(profile)
    table = next(t for t in out["tables"] if t["name"] == "thread")
    by_tid: Counter = Counter()
    cells: Counter = Counter()
    for (_, tid, _), n in keyed.items():
        by_tid[tid] += n
    order = [int(r["key"].split()[0]) for r in table["rows"]]
    assert [r["samples"] for r in table["rows"]] == [by_tid[t] for t in order] == sorted(by_tid.values(), reverse=True)
    for (_, tid, sec), n in keyed.items():
        if sec >= 0:
            cells[(order.index(tid), sec)] += n
    assert {(r, s): n for r, s, n in table["cells"]} == dict(cells)


def test_grouping_codes_matches_unique(monkeypatch):
    rng = np.random.default_rng(2)
    for codes in (rng.integers(-1, 50, 1000), rng.integers(0, 2**40, 1000), np.zeros(0, np.int64)):
        uniq, inverse = threads._group_of(codes)
        want_u, want_i = np.unique(codes, return_inverse=True)
        assert np.array_equal(uniq, want_u) and np.array_equal(inverse, want_i.reshape(-1))
        assert inverse.dtype == np.int32

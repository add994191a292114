"""Stacks (model/stacks.py): the array layout answers exactly as the dict of tuples it replaced."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from pmuprof.model import stacks as stacks_mod
from pmuprof.model.profile import Profile
from pmuprof.model.stacks import Stacks


def _random(seed: int, n: int = 3000) -> dict[tuple[str, ...], int]:
    rng = random.Random(seed)
    out: dict[tuple[str, ...], int] = {}
    for _ in range(n):
        root = rng.choice(["mysqld", "mysqld-2", "f3"])  # a root label that is also a frame name
        stack = (root, *(f"f{rng.randint(0, 40)}" for _ in range(rng.randint(0, 14))))
        out[stack] = out.get(stack, 0) + rng.randint(1, 9)
    return out


def _self(d):
    out = Counter()
    for s, c in d.items():
        if len(s) > 1:
            out[s[-1]] += c
    return out


def _inclusive(d):
    out = Counter()
    for s, c in d.items():
        for f in set(s[1:]):
            out[f] += c
    return out


@pytest.mark.parametrize("block, step", [(1 << 20, 1 << 20), (7, 5), (1, 1)])
def test_counts_match_the_tuple_definitions(monkeypatch, block, step) -> None:
    """Self, inclusive (once per stack, recursion, a root label deeper in its own stack), per root,
    whatever the block sizes the postings are built and summed in."""
    monkeypatch.setattr(stacks_mod, "_POSTING_OCC", block)
    monkeypatch.setattr(stacks_mod, "_SUM_STEP", step)
    d = _random(1)
    d[("f3", "f3", "x", "f3")] = 5  # root label repeated below the root
    st = Stacks.of(d)
    assert dict(st.items()) == d and len(st) == len(d) and st.total == sum(d.values())
    assert st.self_counts() == _self(d) and st.inclusive_counts() == _inclusive(d)
    roots = Counter()
    for s, c in d.items():
        roots[s[0]] += c
    assert st.per_root() == roots
    some = np.flatnonzero(st.lut(["f1", "f3", "x", "mysqld"]))  # "mysqld" only ever a root: 0
    expect = _inclusive(d)
    assert {st.frames[f]: int(n) for f, n in enumerate(st.inclusive_of(some)) if n} == {
        f: expect[f] for f in ("f1", "f3", "x", "mysqld") if expect[f]
    }
    wanted = st.lut(["f1", "f2"])
    assert set(st.rows_with(wanted).tolist()) == {i for i, (s, _) in enumerate(st.items()) if {"f1", "f2"} & set(s[1:])}


@pytest.mark.parametrize("seed", range(6))
def test_top_frames_orders_as_sorting_the_whole_counter(seed) -> None:
    """The top-N by a partition and the smallest names among ties at the cut is the head of the whole sort
    (issue 34: a Counter of 2 M names sorted whole took 350 MB), also with many ties and N past the frames."""
    rng = random.Random(seed)
    frames = [f"f{rng.randrange(10**6):06d}x{i}" for i in range(rng.choice([0, 5, 400, 3000]))]
    values = np.array([rng.choice([0, 1, 2, 2, 3, 7, rng.randint(0, 50)]) for _ in frames], dtype=np.int64)
    counter = Counter({f: int(v) for f, v in zip(frames, values) if v > 0})
    for limit in (0, 1, 3, 60, 5000):
        want = [n for n, _ in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]]
        assert [frames[i] for i in stacks_mod.top_frames(frames, values, limit)] == want, (seed, limit)
    st = Stacks.of(_random(seed))
    assert st.top_self(7) == sorted(st.self_counts().items(), key=lambda kv: (-kv[1], kv[0]))[:7]


@pytest.mark.parametrize("block", [1 << 20, 2, 1])
def test_repeats_are_summed_and_take_and_relabel_keep_counts(monkeypatch, block) -> None:
    monkeypatch.setattr(stacks_mod, "_BLOCK_OCC", block)  # rows hashed a block at a time
    st = Stacks.of([(("p", "a", "b"), 2), (("p", "a", "b"), 3), (("q", "a"), 1), ((), 7)])
    assert dict(st.items()) == {("p", "a", "b"): 5, ("q", "a"): 1}
    p_rows = st.take(st.root_ids == st.frame_index["p"])
    assert dict(p_rows.items()) == {("p", "a", "b"): 5}
    merged = st.relabel(["X" if f in ("p", "q") else f for f in st.frames])
    assert dict(merged.items()) == {("X", "a", "b"): 5, ("X", "a"): 1}
    both = Stacks.of({("p", "a"): 1, ("p", "b"): 2}).relabel(["p", "c", "c"])
    assert dict(both.items()) == {("p", "c"): 3}, "rows that become equal are merged"


def test_a_hash_collision_still_merges_exactly(monkeypatch) -> None:
    """Every row in one hash group: the check finds they differ and the exact merge runs."""

    def collide(ids, offsets, lengths, relabel=None):
        n = len(lengths)
        return np.array([0]), np.zeros(n, dtype=np.int64)

    monkeypatch.setattr(stacks_mod, "_hash_groups", collide)
    d = {("p", "a"): 1, ("p", "b"): 2, ("p", "a", "c"): 3}
    assert dict(Stacks.of(list(d.items()) + [(("p", "a"), 4)]).items()) == {
        ("p", "a"): 5,
        ("p", "b"): 2,
        ("p", "a", "c"): 3,
    }
    st = Stacks.of(d)
    merged, rows = st.relabel_rows(["p", "a", "a", "c"])  # b -> a: collides and merges, exactly, relabelled
    assert dict(merged.items()) == {("p", "a"): 3, ("p", "a", "c"): 3}
    assert [merged.row(r) for r in rows.tolist()] == [("p", "a"), ("p", "a"), ("p", "a", "c")]


@pytest.mark.parametrize("block", [1 << 20, 7, 1])
def test_relabel_merges_like_the_tuple_definition(monkeypatch, block) -> None:
    """Relabelled rows are hashed, checked and gathered a block at a time: the result is the dict of
    relabelled tuples summed, with each old row's new row, whatever the block size."""
    monkeypatch.setattr(stacks_mod, "_BLOCK_OCC", block)
    d = _random(4, 2000)
    st = Stacks.of(d)
    labels = [f"g{int(f[1:]) % 5}" if f.startswith("f") and f[1:].isdigit() else f for f in st.frames]
    expect: Counter = Counter()
    for stack, count in d.items():
        expect[tuple(labels[st.frame_index[f]] for f in stack)] += count
    merged, rows = st.relabel_rows(labels)
    assert dict(merged.items()) == dict(expect) and len(merged) < len(st)
    old = list(st.items())
    assert all(
        merged.row(r) == tuple(labels[st.frame_index[f]] for f in old[i][0]) for i, r in enumerate(rows.tolist())
    )


def test_relabel_hashes_only_rows_whose_frames_now_share_a_label() -> None:
    """Two frames given one label: only the rows holding either can merge, and they do, in the order
    of their first row, as the tuple definition says; the other rows stay as they were."""
    d = _random(6, 2000)
    st = Stacks.of(d)
    labels = ["f1" if f == "f2" else f for f in st.frames]
    expect: Counter = Counter()
    for stack, count in d.items():
        expect[tuple(labels[st.frame_index[f]] for f in stack)] += count
    merged, rows = st.relabel_rows(labels)
    assert list(merged.items()) == list(expect.items()) and len(merged) < len(st)
    assert [merged.row(r) for r in rows.tolist()] == [
        tuple(labels[st.frame_index[f]] for f in s) for s, _ in st.items()
    ]


def test_profile_keeps_the_mapping_interface() -> None:
    d = _random(2, 200)
    prof = Profile(d)
    assert isinstance(prof.stacks, Stacks) and prof.total == sum(d.values())
    assert prof.processes()[0] in ("mysqld", "mysqld-2", "f3")
    only = prof.restrict(["mysqld"])
    assert dict(only.stacks.items()) == {s: c for s, c in d.items() if s[0] == "mysqld"}
    some = next(iter(d))
    assert prof.stacks[some] == d[some] and some in prof.stacks


@pytest.mark.parametrize("step", [1 << 20, 7, 2])
def test_a_process_of_sorted_rows_cuts_its_parents_postings(monkeypatch, step) -> None:
    """Rows sorted by stack (as the native folder writes them) keep each process contiguous: its
    Stacks shares the parent's postings instead of sorting again, with the same answers (the cut
    counted a block of postings at a time, whatever the block size)."""
    monkeypatch.setattr(stacks_mod, "_SUM_STEP", step)
    d = _random(3)
    st = Stacks.of(sorted(d.items()))
    for root in ("mysqld", "mysqld-2", "f3"):
        part = st.take(st.root_ids == st.frame_index[root])
        assert part._parent is not None
        fresh = Stacks.of(dict(part.items()))
        assert (
            part.inclusive_counts()
            == fresh.inclusive_counts()
            == _inclusive({s: c for s, c in d.items() if s[0] == root})
        )
        wanted = part.lut(["f1", "f7"])
        assert sorted(part.row(i) for i in part.rows_with(wanted)) == sorted(
            fresh.row(i) for i in fresh.rows_with(fresh.lut(["f1", "f7"]))
        )
        inner = part.take(np.arange(1, len(part) - 1))  # a run of a run: still the first owner's postings
        assert inner._parent[0] is st and inner._postings[0] is part._postings[0] is st._postings[0]
        again = Stacks.of(dict(inner.items()))
        assert inner.inclusive_counts() == again.inclusive_counts()
        for name in ("f1", "f3"):
            assert [inner.row(i) for i in inner.rows_with(inner.lut([name]))] == [
                again.row(i) for i in again.rows_with(again.lut([name]))
            ]


def test_frame_ids_are_16_bit_up_to_65536_frames_and_relabel_crosses_the_line() -> None:
    """Ids take uint16 for a frame table of at most 65,536 labels (half the memory), int32 past it;
    counts, postings and relabelling answer the same either side, and relabelling a wide table down
    to a narrow one narrows its ids."""
    wide = {("p", *(f"w{i}" for i in range(k * 1000, k * 1000 + 1000))): k + 1 for k in range(66)}
    wide[("p", "w5", "w7")] = 3
    st = Stacks.of(wide)
    assert len(st.frames) == 66001 and st.ids.dtype == np.int32
    assert dict(st.items()) == wide and st.inclusive_counts() == _inclusive(wide)
    folded = st.relabel([f if f == "p" else f"g{int(f[1:]) % 7}" for f in st.frames])
    assert folded.ids.dtype == np.uint16 and len(folded.frames) == 8
    expect: Counter = Counter()
    for stack, count in wide.items():
        expect[("p", *(f"g{int(f[1:]) % 7}" for f in stack[1:]))] += count
    assert dict(folded.items()) == dict(expect) and folded.inclusive_counts() == _inclusive(expect)
    narrow = Stacks.of({("p", *(f"n{i}" for i in range(65535))): 1})
    assert len(narrow.frames) == 65536 and narrow.ids.dtype == np.uint16
    assert narrow.leaf_ids.tolist() == [65535] and narrow.row(0)[-1] == "n65534"
    assert narrow.rows_with(narrow.lut(["n65534"])).tolist() == [0] and narrow.inclusive_counts()["n65534"] == 1


class _Colliding(str):
    """A name whose hash collides with every other's: the index must still tell them apart by value."""

    def __hash__(self) -> int:
        return 7


@pytest.mark.parametrize("colliding", [False, True])
def test_frame_index_answers_as_the_dict_it_replaced(colliding) -> None:
    rng = random.Random(3)
    names = [f"f{rng.randint(0, 300)}" for _ in range(500)] + ["", "mysqld", "[unknown]"]
    frames = [_Colliding(n) for n in names] if colliding else names
    want = {name: i for i, name in enumerate(frames)}  # a name listed twice: its last id
    got = stacks_mod.FrameIndex(frames)
    absent = [_Colliding(n) if colliding else n for n in ("absent", "f-1")]
    for name in [*frames, *absent, 5]:
        assert (name in got) == (name in want) and got.get(name, -1) == want.get(name, -1), name
    assert all(got[name] == i for name, i in want.items()) and dict(got.items()) == want and len(got) == len(want)
    assert sum(got.get(n, -1) >= 0 for n in absent) == 0 and 200 < len(want) < len(frames)
    with pytest.raises(KeyError):
        got[absent[0]]

"""The sample table (model/samples.py): entries per (row, tid, second), following the Stacks through merges."""

from __future__ import annotations

import io

import numpy as np
import pytest

from pmuprof.model import rundir
from pmuprof.model.folded import write_folded
from pmuprof.model.samples import BadTable, Samples, from_keyed, parse_tsv, write_tsv
from pmuprof.model.stacks import Stacks

A, B, C = ("mysqld", "do_command", "ut_delay"), ("mysqld", "do_command", "row_search"), ("mysqld", "[mysqld@0x10]")


def _table() -> tuple[Stacks, Samples]:
    stacks = Stacks.of({A: 5, B: 3, C: 2})
    keyed = {(A, 11, 100): 3, (A, 12, 100): 1, (A, 11, 101): 1, (B, 12, 101): 3, (C, -1, -1): 2}
    return stacks, from_keyed(stacks, keyed)


def test_build_sums_equal_entries_and_sorts():
    t = Samples.build([1, 0, 1, 0], [7, 7, 7, 2**40], [5, 5, 5, 3], [1, 2, 3, 0])
    assert t.rows.tolist() == [0, 1] and t.counts.tolist() == [2, 4] and t.tids.tolist() == [7, 7]
    big = Samples.build([0], [2**40], [-5], [1])
    assert big.tids.tolist() == [-1] and big.seconds.tolist() == [-1]


def test_views_per_tid_and_second_and_where():
    stacks, t = _table()
    assert t.matches(stacks) and t.total == stacks.total == 10
    assert t.per_tid() == {-1: 2, 11: 4, 12: 4}
    assert t.per_second() == {-1: 2, 100: 4, 101: 4}
    part = t.stacks_where(stacks, t.seconds == 101)
    assert dict(part.items()) == {A: 1, B: 3}


def test_merged_rows_follow_a_relabel():
    stacks, t = _table()
    new, rows = stacks.relabel_rows(
        [{"[mysqld@0x10]": "ut_delay", "mysqld": "mysqld"}.get(f, f) for f in stacks.frames]
    )
    moved = t.remap(rows)
    assert moved.matches(new)
    assert moved.as_dict(new)[(("mysqld", "ut_delay"), -1, -1)] == 2  # C became a new row, not merged
    merged, rows2 = stacks.relabel_rows(["x" if f in ("ut_delay", "row_search") else f for f in stacks.frames])
    assert len(merged) == 2 and t.remap(rows2).matches(merged)
    assert t.remap(rows2).as_dict(merged)[(("mysqld", "do_command", "x"), 12, 101)] == 3


def test_take_keeps_only_chosen_rows():
    stacks, t = _table()
    mask = np.array([True, False, True])
    assert t.take(mask, 3).matches(stacks.take(mask))
    assert not t.matches(stacks.take(mask))


def test_tsv_round_trip_in_file_order(tmp_path):
    stacks, t = _table()
    lines = write_folded(io.StringIO(), stacks)
    out = io.StringIO()
    write_tsv(out, t, lines)
    (tmp_path / rundir.STACKS).write_text("".join(";".join(s) + f" {c}\n" for s, c in sorted(stacks.items())))
    (tmp_path / rundir.SAMPLES).write_text(out.getvalue())
    loaded = Stacks.of(dict(sorted(stacks.items())))
    back, notes = rundir.read_samples(tmp_path / rundir.SAMPLES, loaded)
    assert notes == () and back.as_dict(loaded) == t.as_dict(stacks)


@pytest.mark.parametrize("text", ["0\t1\t2\n", "0\t1\tx\t3\n", "-1\t1\t2\t3\n", "0 1 2 3\n"])
def test_bad_tables_are_refused(text):
    with pytest.raises(BadTable):
        parse_tsv(text)


def test_a_table_of_other_stacks_is_left_out_with_a_note(tmp_path):
    stacks, t = _table()
    out = io.StringIO()
    write_tsv(out, t)
    (tmp_path / "s.tsv").write_text(out.getvalue())
    table, notes = rundir.read_samples(tmp_path / "s.tsv", Stacks.of({A: 5}))
    assert table is None and "does not match" in notes[0]


def test_take_in_row_order_is_the_remap_without_the_sort():
    rng = np.random.default_rng(5)
    n = 2000
    table = Samples.build(rng.integers(0, 300, n), rng.integers(1, 9, n), rng.integers(0, 50, n), rng.integers(1, 4, n))
    mask = rng.random(300) < 0.4
    fast = table.take(mask, 300)
    new_row = np.full(300, -1)
    new_row[np.flatnonzero(mask)] = np.arange(int(mask.sum()))
    slow = table.remap(new_row)
    for a, b in (
        (fast.rows, slow.rows),
        (fast.tids, slow.tids),
        (fast.seconds, slow.seconds),
        (fast.counts, slow.counts),
    ):
        assert a.dtype == b.dtype and np.array_equal(a, b)


@pytest.mark.parametrize("wide", [False, True])  # keys that pack into one int64, and keys too wide for that
def test_sorting_matches_the_three_key_order(wide):
    rng = np.random.default_rng(11)
    n = 3000
    r, t, s = rng.integers(0, 40, n), rng.integers(0, 7, n), rng.integers(0, 30, n)
    if wide:  # rows and tids near int32's top, seconds far apart: 31 + 31 + 45 bits
        r, t, s = r * 2**25, t * 2**28, s * 2**40
    table = Samples.build(r, t, s, np.ones(n, dtype=np.int64))
    order = np.lexsort((table.seconds, table.tids, table.rows))
    assert np.array_equal(order, np.arange(len(table)))  # sorted by (row, tid, second)
    assert table.total == n and len(table) < n  # equal entries were summed


def test_rows_merged_by_a_relabel_sum_their_entries_even_in_order():
    """Two neighbouring rows that become one: their (tid, second) entries are one entry, counts summed."""
    merged = Samples.build([0, 1, 2], [7, 7, 7], [100, 100, 100], [2, 5, 1]).remap(np.array([0, 0, 1]))
    assert merged.rows.tolist() == [0, 1] and merged.counts.tolist() == [7, 1]


def test_columns_are_shared_only_when_read_only_and_kept_as_given():
    """A read-only int32 column with nothing to change is the table's own (a table of millions of
    entries is not copied while it is rebuilt); a writable one is copied, so the caller's later
    changes never reach the table; tids and seconds past int32 or below -1 still become -1 in a
    shared build; counts stay int32 unless one is past it."""
    rows, tids = np.array([0, 1], np.int32), np.array([7, 8], np.int32)
    secs, counts = np.array([5, 6], np.int32), np.array([1, 2], np.int32)
    for col in (rows, tids, secs, counts):
        col.setflags(write=False)
    shared = Samples.build(rows, tids, secs, counts)
    assert np.shares_memory(shared.tids, tids) and np.shares_memory(shared.seconds, secs)
    mine = np.array([7, 8], np.int32)
    copied = Samples.build(rows, mine, secs, counts)
    mine[0] = 99
    assert copied.tids.tolist() == [7, 8] and not copied.tids.flags.writeable
    wide = Samples.build(np.array([0, 0], np.uint32), np.array([2**31, -3], np.int64), [1, 1], [1, 1])
    assert wide.rows.dtype == np.int32 and wide.tids.dtype == np.int32
    assert wide.tids.tolist() == [-1] and wide.counts.tolist() == [2]  # both unknown: one entry
    late = Samples.build([0, 0, 1], [1, 1, 1], np.array([2**31, -5, 3], np.int64), np.array([1, 2, 3], np.int64))
    assert late.seconds.dtype == np.int32 and late.seconds.tolist() == [-1, 3] and late.counts.tolist() == [3, 3]
    assert late.counts.dtype == np.int32 and late.total == 6
    many = Samples.build([0, 0, 1], [1, 1, 1], [4, 4, 4], [2**31 - 1, 2**31 - 1, 2**40])
    assert many.counts.dtype == np.int64 and many.counts.tolist() == [2**32 - 2, 2**40], "sums never wrap"
    summed = Samples.build([0, 0], [1, 1], [4, 4], np.array([2**31 - 1, 5], np.int32))
    assert summed.counts.tolist() == [2**31 + 4], "merging equal entries widens past int32"


def test_remap_keeps_every_entry_when_no_row_is_dropped():
    stacks, t = _table()
    same = t.remap(np.arange(len(stacks)))
    assert same.as_dict(stacks) == t.as_dict(stacks) and np.shares_memory(same.tids, t.tids)


def test_a_row_number_past_int32_is_refused():
    with pytest.raises(BadTable):
        parse_tsv(f"{2**31}\t1\t1\t1\n")

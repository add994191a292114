"""The folder's binary stacks file read section by section (tools/native/stacksbin.py): frames kept
to those the stacks use, the sample table shared, a cut-short or malformed file refused in one line."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from pmuprof.errors import InputError
from pmuprof.tools.native.stacksbin import MAGIC, SAMPLES_MAGIC, read_fold_bin


def _file(strings: list[bytes], stacks: list[tuple[list[int], int]], samples=None) -> bytes:
    ids = [i for row, _ in stacks for i in row]
    out = MAGIC + struct.pack("<4Q", len(strings), sum(map(len, strings)), len(stacks), len(ids))
    out += struct.pack(f"<{len(strings)}I", *map(len, strings)) + b"".join(strings)
    out += struct.pack(f"<{len(ids)}I", *ids) + struct.pack(f"<{len(stacks)}I", *(len(r) for r, _ in stacks))
    out += struct.pack(f"<{len(stacks)}Q", *(c for _, c in stacks))
    if samples is not None:
        rows, tids, secs, counts = zip(*samples)
        n = len(samples)
        out += SAMPLES_MAGIC + struct.pack("<Q", n) + struct.pack(f"<{n}I", *rows) + struct.pack(f"<{n}i", *tids)
        out += struct.pack(f"<{n}q", *secs) + struct.pack(f"<{n}Q", *counts)
    return out


def test_stacks_and_samples_read_back(tmp_path):
    # "unused" is interned by the folder but in no kept stack: left out, ids renumbered
    raw = _file(
        [b"mysqld", b"unused", b"do_command", b"ut_delay\xff"],
        [([0, 2, 3], 5), ([0, 2], 2)],
        [(0, 11, 100, 3), (0, 12, 100, 2), (1, 11, 101, 2)],
    )
    (tmp_path / "s.bin").write_bytes(raw)
    stacks, samples = read_fold_bin(tmp_path / "s.bin")
    assert stacks.frames == ("mysqld", "do_command", "ut_delay\\xff")
    assert dict(stacks.items()) == {("mysqld", "do_command", "ut_delay\\xff"): 5, ("mysqld", "do_command"): 2}
    assert samples is not None and samples.matches(stacks) and samples.tids.tolist() == [11, 12, 11]
    assert samples.rows.dtype == samples.seconds.dtype == samples.counts.dtype == np.int32
    (tmp_path / "n.bin").write_bytes(_file([b"p", b"f"], [([0, 1], 4)]))
    assert read_fold_bin(tmp_path / "n.bin")[1] is None  # a folded file's stacks: no sample table


@pytest.mark.parametrize("cut", [7, 30, 60, -40, -5])
def test_a_cut_short_file_is_one_clear_error(tmp_path, cut):
    raw = _file(
        [b"mysqld", b"do_command"], [([0, 1], 5), ([0], 2)], [(0, 11, 100, 3), (1, 11, 100, 2), (1, 12, 101, 2)]
    )
    (tmp_path / "s.bin").write_bytes(raw[:cut])
    with pytest.raises(InputError) as err:
        read_fold_bin(tmp_path / "s.bin")
    assert err.value.fix == "rebuild the native tools (make -C native)" and "\n" not in str(err.value)


def test_a_frame_id_past_the_strings_is_refused(tmp_path):
    (tmp_path / "s.bin").write_bytes(_file([b"p"], [([0, 5], 1)]))
    with pytest.raises(InputError, match="out of range"):
        read_fold_bin(tmp_path / "s.bin")

"""Nearest named callers of unnamed code: the block-wise arrays agree with the definition on tuples."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from pmuprof.analysis.unnamed import _named_callers
from pmuprof.model import stacks as stacks_mod
from pmuprof.model.labels import is_unnamed
from pmuprof.model.stacks import Stacks

UNNAMED = ("[mariadbd+0x10 pause]", "[mariadbd+0x20]", "[unknown]")


def _caller_samples(d: dict, wanted: str) -> Counter:
    """Samples of each nearest named caller above the wanted frame, from the tuples."""
    out: Counter = Counter()
    for stack, count in d.items():
        for j in range(1, len(stack)):
            if stack[j] == wanted:
                above = [f for f in stack[1:j] if not is_unnamed(f)]
                out[above[-1] if above else "(no named caller)"] += count
    return out


@pytest.mark.parametrize("block", [1 << 20, 5, 1])
def test_block_sizes_do_not_change_the_callers(monkeypatch, block) -> None:
    monkeypatch.setattr(stacks_mod, "_BLOCK_OCC", block)
    rng = random.Random(7)
    d: dict[tuple[str, ...], int] = {}
    for _ in range(400):
        frames = [rng.choice(("f1", "f2", "f3") + UNNAMED) for _ in range(rng.randint(0, 8))]
        stack = ("mariadbd", *frames)
        d[stack] = d.get(stack, 0) + rng.randint(1, 5)
    st = Stacks.of(d)
    wanted = {"[mariadbd+0x10 pause]", "[mariadbd+0x20]"}
    got = _named_callers(st, np.array([st.frame_index[f] for f in wanted if f in st.frame_index]))
    expect = {f: _caller_samples(d, f) for f in wanted}
    assert {st.frames[f] for f in got} == {f for f, c in expect.items() if c}
    for f, names in got.items():
        samples = expect[st.frames[f]]
        assert [samples[n] for n in names] == sorted(samples.values(), reverse=True)[:3]  # the top 3, in order


def test_the_last_frame_id_of_a_narrow_table_is_a_caller_not_none() -> None:
    """65,536 frames: ids are uint16 and the last one (65535) is a real caller, never taken for the
    'no caller' mark (-1 in a 16-bit array would read as 65535)."""
    filler = tuple(f"x{i}" for i in range(65533))
    d = {("mariadbd", "[mariadbd+0x20]"): 3, ("mariadbd", *filler): 1, ("mariadbd", "named_last", "[mariadbd+0x20]"): 5}
    st = Stacks.of(d)
    assert len(st.frames) == 65536 and st.ids.dtype == np.uint16 and st.frame_index["named_last"] == 65535
    unnamed = st.frame_index["[mariadbd+0x20]"]
    assert _named_callers(st, np.array([unnamed])) == {unnamed: ["named_last", "(no named caller)"]}

"""Latch attribution on the wait stacks of one real MariaDB 11.4.5 capture under a write load, read two ways.

data/m114-spin200/ holds every wait stack of a capture that disagreed with binutils' addr2line -i (its notes
list addr2line's chain at each call site): inline.folded as pmuprof-perfdata --inline reads the perf.data,
noinline.folded as the capture folded it through perf script (pmuprof-perfdata was not found then). With
inline frames the latch table must split the waits exactly as addr2line does; without them it must say
"A or B" where the names cannot tell, and never leave a known acquirer's wait unidentified.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pmuprof.findings.knowledge import latch_table
from pmuprof.findings.latches import Attributor
from pmuprof.model.folded import load_folded

DATA = Path(__file__).parent / "data" / "m114-spin200"
M114 = ("mariadb", (11, 4, 5))
# addr2line -i at the wait's caller (return address - 1), classified as test_mariadb114_latches._truth_latch does
ADDR2LINE = {"buf_block_lock": 177, "index_lock": 108, "lock_sys_latch_mariadb": 111}


def _spins(name: str) -> Counter[str]:
    """Spin samples per latch key ("unidentified under X" for an acquirer the table gave no latch)."""
    stacks, _ = load_folded(DATA / name)
    attributor = Attributor(latch_table(), *M114)
    out: Counter[str] = Counter()
    for stack, count in stacks.items():
        found = attributor.attribute(stack[1:])  # the process root is no frame
        if found is not None and found[0].kind == "spin":
            wait, latch, _ = found
            out[f"unidentified under {wait.acquirer}" if latch == "unidentified" else latch] += count
    return out


def test_inline_frames_split_the_waits_as_addr2line_does() -> None:
    ours = _spins("inline.folded")
    assert {latch: ours[latch] for latch in ADDR2LINE} == ADDR2LINE, ours
    assert not [key for key in ours if "|" in key], ours  # DWARF leaves no "A or B"


def test_without_inline_frames_the_names_say_a_or_b_never_unidentified() -> None:
    """buf_page_get_gen waits in srw_mutex_impl<true>::wait_and_lock for its page latch's writer mutex (U and X
    requests): with the inline chain gone, that is the page latch or the page_hash latch, both ssux locks."""
    ours = _spins("noinline.folded")
    assert not [key for key in ours if key.startswith("unidentified under buf_page_get_gen")], ours
    assert ours["buf_block_lock|buf_page_hash_latch"] == 177, ours  # addr2line's page latch waits, all of them
    assert ours["buf_block_lock|index_lock"] + ours["index_lock"] == ADDR2LINE["index_lock"], ours
    assert ours["lock_sys_latch_mariadb"] == ADDR2LINE["lock_sys_latch_mariadb"], ours

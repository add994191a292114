"""Bulk frame matching (PatternSet.mask over a frame table) answers exactly as per-frame matching."""

from __future__ import annotations

from typing import Any
from collections.abc import Iterator

import numpy as np

from pmuprof.findings.knowledge import latch_table
from pmuprof.findings.patterns import FrameNames, PatternSet, lock_wrappers

from .conftest import FIXTURES

AWKWARD = [
    "mutex_enter_func(ib_mutex_t*, char const*, unsigned long)",
    "PolicyMutex<TTASEventMutex<GenericPolicy> >::enter",
    "futex_wait_[k]",
    "do_syscall_64_[k]",
    "[mysqld+0x12a0 pause]",
    "[unknown]",
    "a\nb",
    "",
    "ut_delay(unsigned long)",
    "srw_mutex_impl<true>::wait_and_lock()",
    "x" * 2000 + "ut_delay",
    "ut_delay" + "x" * 2000,
    "é::ut_delay",
    "btr_estimate_n_rows_in_range_low(dict_index_t*, dtuple_t const*)",
    "*",
    "?",
    "rw_lock_",
]


def _pattern_sets(rules) -> Iterator[PatternSet]:
    def walk(value: Any) -> Iterator[PatternSet]:
        if isinstance(value, PatternSet):
            yield value
        elif isinstance(value, dict) or hasattr(value, "items"):
            for v in value.values():
                yield from walk(v)
        elif isinstance(value, (list, tuple, frozenset, set)):
            for v in value:
                yield from walk(v)

    for rule in rules:
        yield rule.skip_callers
        for matcher in rule.evidence:
            yield from walk(matcher.spec)
    table = latch_table()
    for entry in (*table.wait_frames, *table.wake_frames, *table.machinery):
        yield entry.patterns
    for latch in table.latches:
        for mapping in latch.mappings:
            for acquirer in mapping.acquirers:
                yield acquirer.patterns
    yield lock_wrappers()


def test_mask_equals_per_frame_matching(rules) -> None:
    frames = set(AWKWARD)
    for path in FIXTURES.glob("*/*.folded"):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line and not line.startswith("#"):
                frames.update(line.rsplit(" ", 1)[0].split(";"))
    frames_t = tuple(sorted(frames))
    names = FrameNames.of(frames_t)
    checked = 0
    for patterns in {id(p): p for p in _pattern_sets(rules)}.values():
        want = np.fromiter((patterns.matches(f) for f in frames_t), dtype=bool, count=len(frames_t))
        got = patterns.mask(names)
        wrong = [frames_t[i] for i in np.flatnonzero(want != got)]
        assert not wrong, (patterns.patterns, wrong[:5])
        checked += 1
    assert checked > 100 and len(frames_t) > 1000

"""Fence samples are a binary's, whoever ran them: with several processes each gets its own part, never a copy."""

from __future__ import annotations

from dataclasses import replace

from pmuprof.findings.engine import evaluate
from pmuprof.model.stacks import Stacks

from .conftest import FIXTURES, load_fixture


def _two_processes(busy_share: float):
    """The hot-fence fixture as process mysqld-1, beside mysqld-2 running the same binary with none of its
    stacks through l_find / lf_hash_search_using_hash_value (``busy_share`` of mysqld-1's other samples)."""
    profile, _ = load_fixture(FIXTURES / "hot-fence" / "fire-lf-hash-pins.folded")
    stacks = {}
    for stack, n in profile.stacks.items():
        stacks[("mysqld-1", *stack[1:])] = n
        if not {"l_find", "lf_hash_search_using_hash_value"} & set(stack):
            stacks[("mysqld-2", *stack[1:])] = max(1, int(n * busy_share))
    return replace(profile, stacks=Stacks.of(stacks))


def test_each_process_gets_its_own_fence_samples(rules):
    profile = _two_processes(1.0)
    found = {(f.process, f.rule): f for f in evaluate(profile, rules)}
    mine = found[("mysqld-1", "hot-fence")]
    # l_find's 200 fence samples are all mysqld-1's (its leaf samples are); the fixture's second site,
    # lf_hash_search_using_hash_value, is never a leaf in these stacks: no process's own, shared out to none
    assert mine.evidence["fence"].count == 200
    assert ("mysqld-2", "hot-fence") not in found  # nothing copied to the process that never ran them


def test_a_shared_site_is_split_by_each_process_s_own_samples(rules):
    profile = _two_processes(0.05)  # mysqld-2 is small: its part of the fences is a share above the threshold
    stacks = dict(profile.stacks.items())
    for stack, n in list(stacks.items()):
        if stack[0] == "mysqld-1" and stack[-1] == "l_find":
            stacks[("mysqld-2", *stack[1:])] = n // 3  # mysqld-2 runs l_find a third as often: 100 of 400
    found = {(f.process, f.rule): f for f in evaluate(replace(profile, stacks=Stacks.of(stacks)), rules)}
    assert found[("mysqld-1", "hot-fence")].evidence["fence"].count == 150  # 200 x 300 / 400
    assert found[("mysqld-2", "hot-fence")].evidence["fence"].count == 50

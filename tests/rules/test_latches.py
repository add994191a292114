"""Latch attribution (findings/latches.py over rules/knowledge/latches.yaml) on frames from real captures."""

from __future__ import annotations

import pytest

from pmuprof.findings.engine import group
from pmuprof.findings.knowledge import latch_table
from pmuprof.findings.latches import Attributor, attribute
from pmuprof.findings.model import Finding

M102 = ("mariadb", (10, 2, 11))
M1011 = ("mariadb", (10, 11, 19))
FUTEX = ("entry_SYSCALL_64_after_hwframe_[k]", "do_syscall_64_[k]", "__x64_sys_futex_[k]", "do_futex_[k]",
         "futex_wait_[k]", "schedule_[k]")


def _latch(frames: tuple[str, ...], server: tuple[str, tuple[int, ...]] = M102) -> tuple[str, str, str] | None:
    """(latch, mode, acquirer) for a stack written root first, or None when it is no wait."""
    found = Attributor(latch_table(), *server).attribute(frames)
    return None if found is None else (found[1], found[2], found[0].acquirer or "")


@pytest.mark.parametrize("frames, expected", [
    # the fil_system mutex is entered inline: the spin's caller is the acquirer (10.2.11 index dives)
    (("btr_estimate_n_rows_in_range_on_level", "fil_space_get", "ut_delay"), ("fil_system_mutex", "", "fil_space_get")),
    # rw-lock machinery names the mode, the caller names the latch
    (("btr_cur_search_to_nth_level", "buf_page_get_gen", "rw_lock_s_lock_spin", "ut_delay"),
     ("buf_block_lock", "S", "buf_page_get_gen")),
    (("btr_search_info_update_slow", "btr_search_build_page_hash_index", "rw_lock_x_lock_func", "ut_delay"),
     ("ahi_latch", "X", "btr_search_build_page_hash_index")),
    (("trx_commit_low", "mtr_t::commit", "mtr_t::Command::execute", "mtr_t::Command::prepare_write", "ut_delay"),
     ("log_sys_mutex", "", "mtr_t::Command::prepare_write")),
    (("trx_commit_in_memory", "srv_release_threads", "ut_delay"), ("srv_sys_mutex", "", "srv_release_threads")),
    # a caller the table does not know: unidentified, under that caller, never a neighbour's name
    (("do_command", "my_made_up_function", "PolicyMutex<TTASEventMutex<GenericPolicy> >::enter", "ut_delay"),
     ("unidentified", "X", "my_made_up_function")),
    # a futex wait whose user-space callers were lost (glibc without frame pointers)
    (("__futex_abstimed_wait_common",) + FUTEX, ("unidentified", "", "")),
])
def test_real_chains_name_their_latch(frames, expected) -> None:
    assert _latch(frames) == expected


def test_the_same_caller_means_another_latch_on_another_version() -> None:
    """mtr commit takes log_sys->mutex in 5.7; 8.0.11's lock-free redo log took it away there."""
    frames = ("mtr_t::commit", "mtr_t::Command::prepare_write", "PolicyMutex<TTASEventMutex<GenericPolicy> >::enter",
              "ut_delay")
    assert _latch(frames, ("mysql", (5, 7, 40)))[0] == "log_sys_mutex"
    assert _latch(frames, ("mysql", (8, 0, 36)))[0] == "unidentified"
    # ut_delay is inline from MariaDB 10.3.17: a frame of that name cannot be a 10.11 spin
    assert _latch(("btr_estimate_n_rows_in_range_on_level", "fil_space_get", "ut_delay"), M1011) is None


def test_what_is_not_a_wait() -> None:
    # waking waiters on unlock is work, not waiting
    assert _latch(("trx_commit", "__GI___lll_lock_wake") + FUTEX) is None
    # a thread giving up its CPU with no latch around it: 10.2's purge coordinator
    assert _latch(("srv_purge_coordinator_thread", "srv_do_purge", "__sched_yield",
                   "entry_SYSCALL_64_after_hwframe_[k]", "do_sched_yield_[k]")) is None
    # ... but the same yield inside rw-lock machinery is a latch wait
    assert _latch(("buf_page_get_gen", "rw_lock_x_lock_func", "__sched_yield"))[0] == "buf_block_lock"
    assert _latch(("do_command", "row_search_mvcc")) is None


def test_rows_add_up_and_keep_unknown_callers_apart() -> None:
    attributor = Attributor(latch_table(), *M102)
    stacks = [(("fil_space_get", "ut_delay"), 30), (("foo", "ut_delay"), 5), (("bar", "ut_delay"), 3),
              (("do_command", "row_search_mvcc"), 62)]
    rows = attribute(stacks, attributor, 100)
    assert [(r.latch, r.under, r.count) for r in rows] == [
        ("fil_system_mutex", "", 30), ("unidentified", "foo", 5), ("unidentified", "bar", 3)]
    assert rows[0].share == 0.3 and rows[0].rule == "fil-space-get-index-dive"
    assert rows[1].name == "unidentified, under foo"


def _finding(rule: str, severity: str, share: float) -> Finding:
    return Finding(rule=rule, title=rule, severity=severity, share=share, message="", fix="")


def test_an_info_finding_heads_no_group_above_info(rules) -> None:
    """fil_system waits at 1 % do not explain index dives costing 60 % (MariaDB 10.2.11, BETWEEN ranges)."""
    by_id = {r.id: r for r in rules}
    small = [_finding("fil-space-get-index-dive", "info", 0.01), _finding("index-dive-cost", "critical", 0.6)]
    assert [f.explained_by for f in group(small, by_id)] == ["", ""]
    big = [_finding("fil-space-get-index-dive", "critical", 0.4), _finding("index-dive-cost", "critical", 0.6)]
    assert [f.explained_by for f in group(big, by_id)] == ["", "fil-space-get-index-dive"]

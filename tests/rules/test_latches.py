"""Latch attribution (findings/latches.py over rules/knowledge/latches.yaml) on frames from real captures."""

from __future__ import annotations

import numpy as np
import pytest

from pmuprof.findings.engine import group
from pmuprof.findings.knowledge import latch_table
from pmuprof.findings.latches import Attributor, attribute
from pmuprof.findings.model import Finding
from pmuprof.findings.stackmatch import StackIndex
from pmuprof.model.profile import Profile

M102 = ("mariadb", (10, 2, 11))
M1011 = ("mariadb", (10, 11, 19))
FUTEX = (
    "entry_SYSCALL_64_after_hwframe_[k]",
    "do_syscall_64_[k]",
    "__x64_sys_futex_[k]",
    "do_futex_[k]",
    "futex_wait_[k]",
    "schedule_[k]",
)


def _latch(frames: tuple[str, ...], server: tuple[str, tuple[int, ...]] = M102) -> tuple[str, str, str] | None:
    """(latch, mode, acquirer) for a stack written root first, or None when it is no wait."""
    found = Attributor(latch_table(), *server).attribute(frames)
    return None if found is None else (found[1], found[2], found[0].acquirer or "")


@pytest.mark.parametrize(
    "frames, expected",
    [
        # the fil_system mutex is entered inline: the spin's caller is the acquirer (10.2.11 index dives)
        (
            ("btr_estimate_n_rows_in_range_on_level", "fil_space_get", "ut_delay"),
            ("fil_system_mutex", "", "fil_space_get"),
        ),
        # rw-lock machinery names the mode, the caller names the latch
        (
            ("btr_cur_search_to_nth_level", "buf_page_get_gen", "rw_lock_s_lock_spin", "ut_delay"),
            ("buf_block_lock", "S", "buf_page_get_gen"),
        ),
        (
            ("btr_search_info_update_slow", "btr_search_build_page_hash_index", "rw_lock_x_lock_func", "ut_delay"),
            ("ahi_latch", "X", "btr_search_build_page_hash_index"),
        ),
        (
            ("trx_commit_low", "mtr_t::commit", "mtr_t::Command::execute", "mtr_t::Command::prepare_write", "ut_delay"),
            ("log_sys_mutex", "", "mtr_t::Command::prepare_write"),
        ),
        (("trx_commit_in_memory", "srv_release_threads", "ut_delay"), ("srv_sys_mutex", "", "srv_release_threads")),
        # a caller the table does not know: unidentified, under that caller, never a neighbour's name
        (
            ("do_command", "my_made_up_function", "PolicyMutex<TTASEventMutex<GenericPolicy> >::enter", "ut_delay"),
            ("unidentified", "X", "my_made_up_function"),
        ),
        # page flushing holds buf_pool->mutex, yet spins on the page's rw-lock: the machinery's type decides
        (
            ("buf_flush_do_batch", "buf_flush_page", "rw_lock_sx_lock_func", "ut_delay"),
            ("buf_block_lock", "SX", "buf_flush_page"),
        ),
        # an acquirer whose only latch is of another kind than the machinery's: unidentified, not the neighbour
        (
            ("btr_estimate_n_rows_in_range_on_level", "fil_space_get", "rw_lock_s_lock_spin", "ut_delay"),
            ("unidentified", "S", "fil_space_get"),
        ),
        # a futex wait whose user-space callers were lost (glibc without frame pointers)
        (("__futex_abstimed_wait_common",) + FUTEX, ("unidentified", "", "")),
    ],
)
def test_real_chains_name_their_latch(frames, expected) -> None:
    assert _latch(frames) == expected


M114 = ("mariadb", (11, 4, 5))
RD_WAIT = ("ssux_lock_impl<true>::rd_wait", "srw_pause_[i]")


# Inline chains as pmuprof-perfdata --inline reads them from MariaDB 11.4.5's DWARF at the wait functions'
# call sites (the same chains addr2line -i gives; tests/integration/test_mariadb114_latches.py checks live)
@pytest.mark.parametrize(
    "frames, expected",
    [
        (
            (
                "btr_cur_t::search_leaf",
                "mtr_t::s_lock_[i]",
                "sux_lock<ssux_lock>::s_lock_[i]",
                "ssux_lock::rd_lock_[i]",
                "ssux_lock_impl<true>::rd_lock_[i]",
            )
            + RD_WAIT,
            ("index_lock", "S", "mtr_t::s_lock_[i]"),
        ),
        (
            ("buf_page_get_gen", "sux_lock<ssux_lock_impl<true> >::s_lock_[i]", "ssux_lock_impl<true>::rd_lock_[i]")
            + RD_WAIT,
            ("buf_block_lock", "S", "buf_page_get_gen"),
        ),
        (
            (
                "btr_cur_t::pessimistic_search_leaf",
                "mtr_t::index_lock_upgrade",
                "sux_lock<ssux_lock>::u_x_upgrade_[i]",
                "ssux_lock_impl<true>::u_wr_upgrade_[i]",
                "ssux_lock_impl<true>::wr_wait",
            ),
            ("index_lock", "X", "mtr_t::index_lock_upgrade"),
        ),
        (
            ("row_search_mvcc", "lock_sys_t::rd_lock", "srw_lock_impl<true>::rd_lock_[i]") + RD_WAIT,
            ("lock_sys_latch_mariadb", "S", "row_search_mvcc"),
        ),
        # an atomic inlined at the leaf is the wait function's own body
        (
            (
                "buf_page_get_gen",
                "sux_lock<ssux_lock_impl<true> >::s_lock_[i]",
                "ssux_lock_impl<true>::rd_lock_[i]",
                "ssux_lock_impl<true>::rd_wait",
                "std::__atomic_base<unsigned int>::load_[i]",
            ),
            ("buf_block_lock", "S", "buf_page_get_gen"),
        ),
        # without DWARF the names cannot tell the page latch from the index latch: both, explicitly
        (("btr_cur_t::search_leaf",) + RD_WAIT[:1], ("buf_block_lock|index_lock", "S", "btr_cur_t::search_leaf")),
        # 10.6+ page_hash_latch is a plain ssux_lock_impl<true> (spins, then sleeps on a futex): named by its
        # inlined member, never mistaken for the page latch that buf_page_get_gen also takes
        (
            ("buf_page_get_gen", "page_hash_latch::lock_shared_[i]", "ssux_lock_impl<true>::rd_lock_[i]") + RD_WAIT,
            ("buf_page_hash_latch", "S", "page_hash_latch::lock_shared_[i]"),
        ),
        (
            (
                "buf_page_init_for_read",
                "page_hash_latch::lock_[i]",
                "ssux_lock_impl<true>::wr_lock_[i]",
                "ssux_lock_impl<true>::wr_wait",
            ),
            ("buf_page_hash_latch", "X", "page_hash_latch::lock_[i]"),
        ),
        (("buf_page_get_gen",) + RD_WAIT[:1], ("buf_block_lock|buf_page_hash_latch", "S", "buf_page_get_gen")),
    ],
)
def test_inline_chains_name_the_latch(frames, expected) -> None:
    assert _latch(frames, M114) == expected


def test_an_inlined_helper_the_table_does_not_list_stands_for_its_caller() -> None:
    """10.2.11's DWARF shows btr_search_s_lock inlined into the AHI rebuild: the latch is its caller's."""
    frames = (
        "btr_cur_search_to_nth_level",
        "btr_search_info_update_slow",
        "btr_search_build_page_hash_index",
        "btr_search_s_lock_[i]",
        "rw_lock_s_lock_spin",
        "ut_delay",
    )
    assert _latch(frames) == ("ahi_latch", "S", "btr_search_s_lock_[i]")
    # a real frame the table does not know is not looked past: unidentified, under it
    assert _latch(frames[:3] + ("btr_search_s_lock",) + frames[4:])[0] == "unidentified"


def test_the_same_caller_means_another_latch_on_another_version() -> None:
    """mtr commit takes log_sys->mutex in 5.7; 8.0.11's lock-free redo log took it away there."""
    frames = (
        "mtr_t::commit",
        "mtr_t::Command::prepare_write",
        "PolicyMutex<TTASEventMutex<GenericPolicy> >::enter",
        "ut_delay",
    )
    assert _latch(frames, ("mysql", (5, 7, 40)))[0] == "log_sys_mutex"
    assert _latch(frames, ("mysql", (8, 0, 36)))[0] == "unidentified"
    # ut_delay is inline from MariaDB 10.3.17: a frame of that name cannot be a 10.11 spin
    assert _latch(("btr_estimate_n_rows_in_range_on_level", "fil_space_get", "ut_delay"), M1011) is None


def test_what_is_not_a_wait() -> None:
    # waking waiters on unlock is work, not waiting
    assert _latch(("trx_commit", "__GI___lll_lock_wake") + FUTEX) is None
    # a thread giving up its CPU with no latch around it: 10.2's purge coordinator
    assert (
        _latch(
            (
                "srv_purge_coordinator_thread",
                "srv_do_purge",
                "__sched_yield",
                "entry_SYSCALL_64_after_hwframe_[k]",
                "do_sched_yield_[k]",
            )
        )
        is None
    )
    # ... but the same yield inside rw-lock machinery is a latch wait
    assert _latch(("buf_page_get_gen", "rw_lock_x_lock_func", "__sched_yield"))[0] == "buf_block_lock"
    assert _latch(("do_command", "row_search_mvcc")) is None


def test_rows_add_up_and_keep_unknown_callers_apart() -> None:
    attributor = Attributor(latch_table(), *M102)
    stacks = {
        ("mysqld", "fil_space_get", "ut_delay"): 30,
        ("mysqld", "foo", "ut_delay"): 5,
        ("mysqld", "bar", "ut_delay"): 3,
        ("mysqld", "do_command", "row_search_mvcc"): 62,
    }
    index = StackIndex(Profile(stacks), "mysqld", attributor)
    rows = attribute(index.waits(), index.total, attributor.latches)
    assert [(r.latch, r.under, r.count) for r in rows] == [
        ("fil_system_mutex", "", 30),
        ("unidentified", "foo", 5),
        ("unidentified", "bar", 3),
    ]
    assert rows[0].share == 0.3 and rows[0].rule == "fil-space-get-index-dive"
    assert rows[1].name == "unidentified, under foo"


def _finding(rule: str, severity: str, stacks: range, weights: np.ndarray) -> Finding:
    share = sum(weights[i] for i in stacks) / weights.sum()
    return Finding(rule=rule, title=rule, severity=severity, share=share, stacks=np.arange(stacks.start, stacks.stop))


def test_grouping_follows_shared_stacks(rules) -> None:
    """Stacks 0..99 of one sample each; index dives are 0..59."""
    by_id, w = {r.id: r for r in rules}, np.ones(100, dtype=np.int64)
    dives = _finding("index-dive-cost", "critical", range(0, 60), w)

    def causes(*findings: Finding) -> dict[str, str]:
        return {f.rule: f.explained_by for f in group(list(findings), by_id, w) if f.explained_by}

    # fil_system waits at 1 % do not explain dives costing 60 % (MariaDB 10.2.11, BETWEEN ranges) ...
    fil = _finding("fil-space-get-index-dive", "info", range(0, 1), w)
    assert causes(fil, dives) == {"fil-space-get-index-dive": "index-dive-cost"}
    # ... but when most of the dives are waits for it, fil_system is the hotspot that explains them
    fil = _finding("fil-space-get-index-dive", "critical", range(0, 40), w)
    assert causes(fil, dives) == {"index-dive-cost": "fil-space-get-index-dive"}
    # AHI waits inside the dives are their consequence; AHI waits from elsewhere are not
    assert causes(_finding("adaptive-hash-index", "critical", range(0, 20), w), dives) == {
        "adaptive-hash-index": "index-dive-cost"
    }
    assert causes(_finding("adaptive-hash-index", "critical", range(60, 80), w), dives) == {}
    # spin split over two latches is explained when they cover half of it together, under the larger
    spin = _finding("innodb-spin-wait", "critical", range(60, 100), w)
    page = _finding("page-latch-contention", "critical", range(60, 75), w)
    log = _finding("log-sys-mutex", "critical", range(75, 85), w)
    assert causes(spin, page, log) == {"innodb-spin-wait": "page-latch-contention"}
    assert causes(spin, _finding("log-sys-mutex", "critical", range(75, 90), w)) == {}
    # an info cause heads no group above info
    assert causes(spin, _finding("page-latch-contention", "info", range(60, 100), w)) == {}


M80 = ("mysql", (8, 0, 39))


# MySQL 8.0 cannot run here: chains built from 8.0.39 source function names (the rows' `verified` entries)
@pytest.mark.parametrize(
    "frames, expected",
    [
        # lock_sys sharding (8.0.21+): the guard (machinery) names the latch, be it the global Sharded_rw_lock
        # or a shard mutex; the function above it is the acquirer
        (
            (
                "lock_clust_rec_modify_check_and_lock",
                "locksys::Shard_latch_guard::Shard_latch_guard",
                "Sharded_rw_lock::s_lock",
                "rw_lock_s_lock_spin",
                "ut_delay",
            ),
            ("lock_sys_latch_8021", "S", "lock_clust_rec_modify_check_and_lock"),
        ),
        (
            (
                "lock_rec_insert_check_and_lock",
                "locksys::Shard_latch_guard::Shard_latch_guard",
                "PolicyMutex<TTASEventMutex<GenericPolicy> >::enter",
                "ut_delay",
            ),
            ("lock_sys_latch_8021", "X", "lock_rec_insert_check_and_lock"),
        ),
        # tree changes SX-latch the index; the same function's page latches use the same rw-lock code: both
        (
            ("row_ins_sec_index_entry_low", "btr_cur_search_to_nth_level", "rw_lock_sx_lock_func", "ut_delay"),
            ("buf_block_lock|index_lock", "SX", "btr_cur_search_to_nth_level"),
        ),
        # no log mutex since 8.0.11: a user thread spins for the log buffer's sn range
        (
            ("mtr_t::commit", "mtr_t::Command::execute", "log_buffer_reserve", "log_buffer_s_lock_wait", "ut_delay"),
            ("redo_log_buffer_8011", "", "log_buffer_s_lock_wait"),
        ),
    ],
)
def test_mysql80_chains_name_their_latch(frames, expected) -> None:
    assert _latch(frames, M80) == expected


# --- attribution by call site: an "A or B" wait counts for no single-latch rule (issue 21, item 3) ---

SEARCH_LEAF_S = (
    "row_ins_sec_index_entry_low",
    "btr_cur_t::search_leaf",
    "mtr_t::s_lock_[i]",
    "sux_lock<ssux_lock>::s_lock_[i]",
    "ssux_lock::rd_lock_[i]",
    "ssux_lock_impl<true>::rd_lock_[i]",
    "ssux_lock_impl<true>::rd_wait",
    "srw_pause_[i]",
)
PAGE_S = (
    "row_search_index_entry",
    "btr_cur_t::search_leaf",
    "buf_page_get_gen",
    "sux_lock<ssux_lock_impl<true> >::s_lock_[i]",
    "ssux_lock_impl<true>::rd_lock_[i]",
    "ssux_lock_impl<true>::rd_wait",
    "srw_pause_[i]",
)
WORK = ("do_command", "dispatch_command", "mysql_parse")


def _stacks(root: str, waits: dict[tuple[str, ...], int], strip_inline: bool = False) -> dict[tuple[str, ...], int]:
    """Canned stacks, root first: the waits and 1,000 samples of other work; without DWARF (strip_inline) the
    inline frames (_[i]) are gone and the real frames stay, as the folder gives them for a binary without it."""
    out = {(root,) + WORK: 1000}
    for frames, n in waits.items():
        frames = tuple(f for f in frames if not (strip_inline and f.endswith("_[i]")))
        out[(root,) + frames] = out.get((root,) + frames, 0) + n
    return out


def _shares(stacks: dict[tuple[str, ...], int], server: tuple[str, tuple[int, ...]]) -> dict[str, float]:
    """The share each latch spec counts: the index rule's, the page rule's and the ambiguous rule's."""
    from pmuprof.findings.stackmatch import match_latch

    index = StackIndex(Profile(stacks), next(iter(stacks))[0], Attributor(latch_table(), *server))
    specs = {
        "index": {"latches": frozenset({"index_lock"})},
        "page": {"latches": frozenset({"buf_block_lock"})},
        "both": {"latches": frozenset({"index_lock", "buf_block_lock"})},
        "ambiguous": {"latches": frozenset(), "ambiguous": True},
    }
    return {name: round(match_latch(index, spec).share, 4) for name, spec in specs.items()}


def test_inline_frames_count_the_index_latch_once_and_never_for_the_page() -> None:
    """MariaDB 11.4 with DWARF: mtr_t::s_lock_[i] names the index latch; the page rule does not count it."""
    shares = _shares(_stacks("mariadbd", {SEARCH_LEAF_S: 250, PAGE_S: 0}), M114)
    assert shares == {"index": 0.2, "page": 0.0, "both": 0.2, "ambiguous": 0.0}
    # the page latch's own waits (buf_page_get_gen's sux_lock<> member) count for the page rule only
    shares = _shares(_stacks("mariadbd", {SEARCH_LEAF_S: 250, PAGE_S: 250}), M114)
    assert shares == {"index": 0.1667, "page": 0.1667, "both": 0.3333, "ambiguous": 0.0}


def test_without_dwarf_neither_latch_rule_counts_the_waits() -> None:
    """The same stacks without inline frames: 'page latch or index tree latch', for the ambiguous finding only;
    a rule that lists both latches (index dives) still counts them."""
    shares = _shares(_stacks("mariadbd", {SEARCH_LEAF_S: 250}, strip_inline=True), M114)
    assert shares == {"index": 0.0, "page": 0.0, "both": 0.2, "ambiguous": 0.2}


def test_mysql80_search_to_nth_level_waits_are_ambiguous() -> None:
    frames = ("row_ins_sec_index_entry_low", "btr_cur_search_to_nth_level", "rw_lock_sx_lock_func", "ut_delay")
    assert _shares(_stacks("mysqld", {frames: 250}), M80) == {"index": 0.0, "page": 0.0, "both": 0.2, "ambiguous": 0.2}


def test_alternatives_one_rule_covers_are_not_ambiguous() -> None:
    """log_write_up_to takes log_sys->mutex or its write_mutex (MariaDB 10.2): both are log-sys-mutex's, so
    that rule counts the wait and the ambiguous finding does not."""
    from pmuprof.findings.stackmatch import match_latch

    frames = (
        "trx_commit_complete_for_mysql",
        "log_write_up_to",
        "PolicyMutex<TTASEventMutex<GenericPolicy> >::enter",
        "ut_delay",
    )
    assert _latch(frames)[0] == "log_sys_mutex|log_write_mutex"
    index = StackIndex(Profile(_stacks("mysqld", {frames: 250})), "mysqld", Attributor(latch_table(), *M102))
    assert match_latch(index, {"latches": frozenset(), "ambiguous": True}).count == 0
    log = {"latches": frozenset({"log_sys_mutex", "log_write_mutex", "log_flush_order_mutex"})}
    assert match_latch(index, log).count == 250


def test_the_ambiguous_finding_names_the_candidates_and_claims_neither(rules) -> None:
    from pmuprof.findings.engine import evaluate

    stacks = _stacks("mariadbd", {SEARCH_LEAF_S: 250}, strip_inline=True)
    profile = Profile(stacks)
    attributor = Attributor(latch_table(), *M114)
    index = StackIndex(profile, "mariadbd", attributor)
    rows = attribute(index.waits(), index.total, attributor.latches)
    assert [(r.latch, r.name, r.rule) for r in rows] == [
        ("buf_block_lock|index_lock", "page latch or index tree latch", None)
    ]
    by_rule = {f.rule: f for f in evaluate(profile, rules)}
    assert "index-tree-latch" not in by_rule and "page-latch-contention" not in by_rule
    found = by_rule["ambiguous-latch"]
    assert found.title == "Page latch or index tree latch — the stack cannot tell which"
    assert found.severity == "critical" and round(found.share, 4) == 0.2 and found.ambiguous
    assert "page latch or index tree latch 20.0%" in found.message
    assert "index-tree-latch and page-latch-contention" in found.message


def test_an_ambiguous_finding_does_not_outrank_a_named_latch_of_the_same_weight() -> None:
    from pmuprof.findings.model import ordered

    named = Finding(rule="page-latch-contention", title="p", severity="warning", share=0.1)
    unsure = Finding(rule="ambiguous-latch", title="a", severity="warning", share=0.1, ambiguous=True)
    assert [f.rule for f in ordered([unsure, named])] == ["page-latch-contention", "ambiguous-latch"]
    bigger = Finding(rule="ambiguous-latch", title="a", severity="warning", share=0.12, ambiguous=True)
    assert [f.rule for f in ordered([named, bigger])] == ["ambiguous-latch", "page-latch-contention"]

"""Write a folded-stacks file of N distinct mysqld-shaped stacks (a long-tail profile for report benchmarks).

    python3 benchmarks/gen_folded.py 1000000 /tmp/pmuprof-bench/1m.folded [--seed 7]

Shape, like a busy server over a long capture: threads enter through the server's real entry
points (connection, purge, page cleaner, master), then walk a call graph of real MariaDB 10.2 /
MySQL 5.7 function names (70 % of steps take a node's preferred callee, so there are hot paths
and a long tail), with spin and wait leaves (ut_delay under rw-lock and mutex machinery,
futex waits with kernel frames), unnamed code ('[mysqld+0x…]'), recursion (the optimizer, the
parser) and libc leaves. Unnamed code comes from 6,000 functions (a stripped mysqld's .eh_frame
functions as pmuprof labels them), so distinct stacks come from call paths, not random addresses. Counts follow a Zipf law, so a few stacks hold much of the samples.
Deterministic for a given seed; rules fire on it the way they would on a real server.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

ENTRIES = {
    "connection": [
        "start_thread",
        "pfs_spawn_thread",
        "handle_one_connection",
        "do_handle_one_connection",
        "do_command",
        "dispatch_command",
        "mysql_parse",
        "mysql_execute_command",
    ],
    "purge": ["start_thread", "srv_purge_coordinator_thread", "srv_do_purge", "trx_purge"],
    "cleaner": ["start_thread", "buf_flush_page_cleaner_coordinator", "buf_flush_lists", "buf_flush_do_batch"],
    "master": ["start_thread", "srv_master_thread", "srv_master_do_active_tasks"],
}
LAYERS = [
    [
        "execute_sqlcom_select",
        "handle_select",
        "mysql_select",
        "JOIN::optimize",
        "JOIN::exec",
        "mysql_update",
        "mysql_insert",
        "mysql_delete",
        "trans_commit_stmt",
        "ha_commit_trans",
        "open_tables",
        "lock_tables",
    ],
    [
        "make_join_statistics",
        "SQL_SELECT::test_quick_select",
        "get_key_scans_params",
        "check_quick_select",
        "handler::multi_range_read_info_const",
        "sub_select",
        "evaluate_join_record",
        "join_read_always_key",
        "handler::ha_index_read_map",
        "handler::ha_update_row",
        "handler::ha_write_row",
        "handler::ha_rnd_next",
        "Item_func::val_int",
        "Item_cond_and::val_int",
        "Arg_comparator::compare",
        "JOIN::prepare",
        "setup_fields",
        "find_field_in_tables",
        "MDL_context::acquire_lock",
        "open_table",
    ],
    [
        "ha_innobase::records_in_range",
        "ha_innobase::index_read",
        "ha_innobase::update_row",
        "ha_innobase::write_row",
        "ha_innobase::general_fetch",
        "innobase_commit",
        "row_search_mvcc",
        "row_upd_step",
        "row_ins_step",
        "row_sel_store_mysql_rec",
        "trx_commit_for_mysql",
        "trx_commit",
        "trx_commit_low",
        "trx_commit_in_memory",
        "lock_rec_lock",
        "lock_trx_release_locks",
        "btr_estimate_n_rows_in_range_low",
        "row_undo_ins",
    ],
    [
        "btr_cur_search_to_nth_level",
        "btr_pcur_open_low",
        "btr_estimate_n_rows_in_range_on_level",
        "row_upd_clust_rec",
        "row_ins_clust_index_entry_low",
        "mtr_t::commit",
        "mtr_t::Command::execute",
        "log_write_up_to",
        "btr_search_guess_on_hash",
        "btr_search_info_update_slow",
        "page_cur_search_with_match",
        "lock_rec_convert_impl_to_expl",
        "trx_undo_report_row_operation",
        "fil_space_get",
    ],
    [
        "buf_page_get_gen",
        "btr_search_build_page_hash_index",
        "mtr_t::Command::prepare_write",
        "page_rec_get_n_recs_before",
        "rec_get_offsets_func",
        "cmp_dtuple_rec_with_match_low",
        "buf_LRU_get_free_block",
        "log_reserve_and_open",
        "srv_release_threads",
        "lock_rec_other_has_conflicting",
        "buf_page_make_young",
    ],
]
SPIN = [
    ["rw_lock_s_lock_spin", "ut_delay"],
    ["rw_lock_x_lock_func", "ut_delay"],
    ["rw_lock_sx_lock_func", "ut_delay"],
    ["PolicyMutex<TTASEventMutex<GenericPolicy> >::enter", "ut_delay"],
    [
        "PolicyMutex<TTASEventMutex<GenericPolicy> >::enter",
        "sync_array_wait_event",
        "os_event::wait_low",
        "pthread_cond_wait@@GLIBC_2.3.2",
        "__futex_abstimed_wait_common",
        "entry_SYSCALL_64_after_hwframe_[k]",
        "do_syscall_64_[k]",
        "__x64_sys_futex_[k]",
        "do_futex_[k]",
        "futex_wait_[k]",
        "schedule_[k]",
        "__schedule_[k]",
        "finish_task_switch.isra.0_[k]",
    ],
]
LEAVES = [
    "memcpy",
    "__memmove_avx_unaligned_erms",
    "_int_malloc",
    "_int_free",
    "malloc",
    "cfree@GLIBC_2.2.5",
    "my_hash_sort_simple",
    "ut_crc32_hw",
    "rec_get_nth_field_offs",
    "page_cur_search_with_match_bytes",
    "btr_cur_search_to_nth_level",
    "cmp_dtuple_rec_with_match_bytes",
    "row_sel_field_store_in_mysql_format_func",
    "MYSQLparse",
    "lex_one_token",
    "my_strnncollsp_simple",
    "Field_long::val_int",
    "irqentry_exit_to_user_mode_[k]",
]
UNNAMED = [f"[mysqld+0x{0x400000 + 0x2A0 * i:x}]" for i in range(6000)]
RECURSIVE = ["Item_cond_and::val_int", "JOIN::optimize", "MYSQLparse", "sub_select"]


def build_graph(rng: random.Random) -> dict[str, list[str]]:
    """Each function's callees: the next layer's functions, the first one preferred."""
    graph: dict[str, list[str]] = {}
    for depth, layer in enumerate(LAYERS):
        below = LAYERS[depth + 1] if depth + 1 < len(LAYERS) else []
        for fn in layer:
            callees = rng.sample(below, k=min(len(below), rng.randint(3, 7))) if below else []
            graph[fn] = callees
    return graph


def one_stack(rng: random.Random, graph: dict[str, list[str]]) -> tuple[str, ...]:
    entry = rng.choices(list(ENTRIES), weights=[80, 8, 7, 5])[0]
    frames = ["mysqld", *ENTRIES[entry]]
    fn = rng.choice(LAYERS[0]) if entry == "connection" else rng.choice(LAYERS[rng.randint(2, 3)])
    while fn:
        frames.append(fn)
        if fn in RECURSIVE and rng.random() < 0.25:
            frames += [fn] * rng.randint(1, 3)
        callees = graph.get(fn, [])
        if not callees or rng.random() < 0.15:
            break
        fn = callees[0] if rng.random() < 0.7 else rng.choice(callees)
    roll = rng.random()
    if roll < 0.25:
        frames += rng.choice(SPIN)
    elif roll < 0.45:  # unnamed code, grouped by function as pmuprof labels it: a few thousand functions
        frames.append(UNNAMED[min(int(rng.paretovariate(0.8)) - 1, len(UNNAMED) - 1)])
        if rng.random() < 0.5:
            frames.append(rng.choice(UNNAMED))
    else:
        frames.append(rng.choice(LEAVES))
    return tuple(frames)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stacks", type=int)
    ap.add_argument("out", type=Path)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    graph = build_graph(rng)
    seen: set[int] = set()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    samples = 0
    with open(args.out, "w", encoding="utf-8") as out:
        while len(seen) < args.stacks:
            stack = one_stack(rng, graph)
            key = hash(stack)
            if key in seen:
                continue
            seen.add(key)
            count = max(1, int(2000 / (len(seen) ** 0.7)) + (rng.random() < 0.3))
            samples += count
            out.write(";".join(stack) + f" {count}\n")
    print(f"{args.out}: {len(seen):,} distinct stacks, {samples:,} samples", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

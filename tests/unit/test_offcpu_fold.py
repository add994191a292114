"""Off-CPU capture without BPF: the tracer's file format, naming, folding and thread snapshots on known input."""

from __future__ import annotations

import pytest

from pmuprof.capture.offcpu import snapshot
from pmuprof.capture.offcpu.fold import fold, proc_state
from pmuprof.capture.offcpu.symbols import KernelSymbols, UserSymbols
from pmuprof.capture.proc.threads import ThreadNow, parse_stack, parse_state
from pmuprof.model.labels import parse_state as parse_state_label, state_label
from pmuprof.model.run import FileMap
from pmuprof.tools.native import offcpu as tool

KALLSYMS = """\
ffffffff81000000 T _stext
ffffffff81000100 T entry_SYSCALL_64_after_hwframe
ffffffff81000200 T do_syscall_64
ffffffff81000300 T __x64_sys_futex
ffffffff81000400 T futex_wait
ffffffff81000500 T schedule
ffffffff81000600 T __schedule
ffffffff81000700 T bpf_trace_run4
ffffffff81000800 t io_schedule
0000000000000000 A fixed_percpu_data
"""

# tgid 100: thread 101 waited 3 ms twice on a futex (S), 102 preempted 1 ms (R), 103 blocked since before
# the tracer attached (B, 2 ms), 104 still off the CPU at the end (D since 7 ms before it).
OUTPUT = """\
pmuprof-offcpu\t1
t0_ns\t1000000000
end_ns\t1010000000
stopped_by\tSIGINT
limit\tthreads\t64
limit\tentries\t64
limit\tstacks\t64
stat\tswitches\t4
stat\tkstack_lost\t0
stat\tustack_lost\t1
stat\tustack_scanned\t1
wait\t100\t101\tS\t2\t6000000\ta1\t2\tworker
wait\t100\t102\tR\t1\t1000000\ta3\t-17\tworker
wait\t100\t103\tB\t1\t2000000\t0\t-1\tstuck
open\t100\t104\tD\t1003000000\ta1\t4
stack\t2\tffffffff81000710,ffffffff81000610,ffffffff81000510,ffffffff81000410,ffffffff81000310,ffffffff81000210
stack\t4\tffffffff81000610,ffffffff81000810
ustack\ta1\t1\t7f0000001010,555500002020
ustack\ta3\t0\t555500003030
"""

MAPS = {
    100: (
        FileMap(0x7F0000000000, 0x7F0000100000, 0, "/lib/libc.so.6"),
        FileMap(0x555500000000, 0x555500010000, 0x1000, "/usr/sbin/server"),
    )
}


def fake_funcs(path, offsets, file_offsets=False, debug=None):
    assert file_offsets
    names = {
        "/lib/libc.so.6": {0x1010: ("__lll_lock_wait", None)},  # the leaf: looked up as is
        "/usr/sbin/server": {0x301F: ("do_work", None), 0x4030: (None, 0x4000)},
    }[path]
    out = []
    for off in offsets:
        name, start = names.get(off, (None, None))
        entry = {"input": f"0x{off:x}"}
        if name:
            entry["display"] = name
        if start is not None:
            entry["start"] = f"0x{start:x}"
        out.append(entry)
    return {"addresses": out}


def test_parse_and_argv():
    out = tool.parse(OUTPUT.splitlines(True))
    assert (out.t0_ns, out.end_ns, out.stopped_by) == (1_000_000_000, 1_010_000_000, "SIGINT")
    assert out.stats == {"switches": 4, "kstack_lost": 0, "ustack_lost": 1, "ustack_scanned": 1}
    assert out.limits["stacks"] == 64 and out.scanned == {0xA1}
    assert out.waits[1] == tool.Wait(100, 102, "R", 1, 1_000_000, 0xA3, -17, "worker")
    assert out.stack(-17) == () and out.ustack(0xA3) == (0x555500003030,) and out.ustack(0) == ()
    assert tool.argv("/x/pmuprof-offcpu", [7, 8], 12.5, "/o")[:6] == [
        "/x/pmuprof-offcpu",
        "--pid",
        "7",
        "--pid",
        "8",
        "--duration",
    ]
    with pytest.raises(ValueError):
        tool.argv("x", list(range(1, 18)), 1, "/o")
    with pytest.raises(ValueError):
        tool.parse(["something else\n"])


def test_kernel_frames_start_below_the_scheduler():
    k = KernelSymbols(KALLSYMS)
    frames = k.frames((0xFFFFFFFF81000710, 0xFFFFFFFF81000610, 0xFFFFFFFF81000510, 0xFFFFFFFF81000410))
    assert frames == ("futex_wait_[k]", "schedule_[k]")  # the BPF and __schedule frames are the tracer's
    assert k.name(0xFFFFFFFFC0000000) is None  # far past the last symbol: not named after it


def test_fold_sums_microseconds_with_state_leaf():
    out = tool.parse(OUTPUT.splitlines(True))
    start = {
        100: {
            103: ThreadNow(103, "stuck", "D", "io_schedule", ("do_syscall_64", "io_schedule")),
            105: ThreadNow(105, "idle", "S", "poll", ("do_syscall_64", "do_poll")),
            106: ThreadNow(106, "busy", "R", "", ()),
        }
    }
    end = {
        100: {
            105: ThreadNow(105, "idle", "S", "poll", ("do_syscall_64", "do_poll")),
            106: ThreadNow(106, "busy", "R", "", ()),
        }
    }
    users = UserSymbols(MAPS, fake_funcs)
    result = fold(out, {100: "server"}, KernelSymbols(KALLSYMS), users, start, end)
    s = result.stacks
    futex = (
        "server",
        "do_work",
        "__lll_lock_wait",
        "do_syscall_64_[k]",
        "__x64_sys_futex_[k]",
        "futex_wait_[k]",
        "schedule_[k]",
        "off-cpu:S",
    )
    assert s[futex] == 6000
    assert s[("server", "[server+0x4000]", "off-cpu:R")] == 1000  # lost kernel stack: user frames only
    assert s[("server", "[unknown]", "do_syscall_64_[k]", "io_schedule_[k]", "off-cpu:D")] == 2000  # before t0
    open_stack = ("server", "do_work", "__lll_lock_wait", "io_schedule_[k]", "off-cpu:D")
    assert s[open_stack] == 7000  # still waiting at the end: counted from its switch-out to the end
    assert s[("server", "[unknown]", "do_syscall_64_[k]", "do_poll_[k]", "off-cpu:S")] == 10000  # whole window
    assert len(s) == 5  # the thread running at both snapshots (106) waited for nothing
    assert result.total_us == 26000 and result.before_us == 12000 and result.threads == 5


def test_fold_per_thread_roots():
    out = tool.parse(OUTPUT.splitlines(True))
    result = fold(
        out, {100: "server"}, KernelSymbols(KALLSYMS), UserSymbols(MAPS, fake_funcs), {}, {}, per_thread_roots=True
    )
    assert any(k[:2] == ("server", "worker-101") for k in result.stacks)


def test_unreadable_binary_gives_dso_label():
    users = UserSymbols(MAPS, None)
    users.resolve([(100, 0x555500003030), (100, 0x1234)])
    assert users.frames(100, (0x555500003030,)) == ("[server]",)
    assert users.labels[(100, 0x1234)] == ("[unknown]",)


def test_symbolizer_names_first_with_inline_frames_and_helper_the_rest():
    """The perf.data reader's symbolizer names a function as on-CPU stacks do, with its inlined calls as
    name_[i] frames (root first); code it has no name for goes to pmuprof-helper's .eh_frame functions."""
    asked = []

    def names(queries):
        asked.extend(queries)
        return [
            ("lock_wait", ("pthread_cond_wait_inline", "inner")) if off == 0x4030 else ("", ()) for _, off, _ in queries
        ]

    seen = []

    def funcs(path, offsets, **_):
        seen.extend(offsets)
        return {"addresses": [{"input": f"{o:x}", "start": "4000"} for o in offsets]}

    users = UserSymbols(MAPS, funcs, names)
    users.resolve([(100, 0x555500003030), (100, 0x555500004010)])
    assert users.frames(100, (0x555500003030,)) == ("lock_wait", "inner_[i]", "pthread_cond_wait_inline_[i]")
    assert len(asked) == 2 and seen == [0x5010]
    # leaf first in, root first out; a return address is looked up one byte back (0x4011 -> 0x4010)
    assert users.frames(100, (0x555500003030, 0x555500004011)) == (
        "[server+0x4000]",
        "lock_wait",
        "inner_[i]",
        "pthread_cond_wait_inline_[i]",
    )


def test_symbolizer_unavailable_falls_back_to_the_helper_and_says_so():
    users = UserSymbols(
        MAPS,
        lambda path, offsets, **_: {"addresses": [{"input": f"{o:x}", "display": "do_work"} for o in offsets]},
        lambda q: None,
    )
    users.resolve([(100, 0x555500003030)])
    assert users.frames(100, (0x555500003030,)) == ("do_work",) and users.problems


def test_state_labels_and_proc_parsing():
    assert state_label("D") == "off-cpu:D" and state_label("X") == "off-cpu:?"
    assert parse_state_label("off-cpu:R") == "R" and parse_state_label("schedule_[k]") is None
    assert [proc_state(c) for c in "DISTtRZ"] == ["D", "D", "S", "T", "T", "R", "?"]
    text = "[<0>] futex_wait_queue+0x60/0x90\n[<0>] __x64_sys_futex+0x1/0x2\n[<0>] do_syscall_64+0x5/0x6\n"
    assert parse_stack(text) == ("do_syscall_64", "__x64_sys_futex", "futex_wait_queue")
    assert parse_state("123 (a (b) c) S 1 2 3") == "S"


def test_snapshot_groups_identical_threads():
    threads = [
        ThreadNow(1, "conn", "S", "futex_wait", ("a", "b")),
        ThreadNow(2, "conn", "S", "futex_wait", ("a", "b")),
        ThreadNow(3, "io", "D", "io_schedule", ("a", "c")),
    ]
    snap = snapshot.group("end", "t", 1, "server", threads, {2: (("main", "lock"), 12.5, 2.0)})
    assert snap.threads == 3 and snap.states == {"S": 2, "D": 1}
    counts = sorted((g.count, g.tids, g.user, g.off_cpu_ms, g.runnable_ms) for g in snap.groups)
    assert counts == [(1, (1,), (), None, None), (1, (2,), ("main", "lock"), 12.5, 2.0), (1, (3,), (), None, None)]
    same = snapshot.group("start", "t", 1, "server", threads[:2])
    assert [(g.count, g.comms) for g in same.groups] == [(2, {"conn": 2})]


# Format 3, lazy mode at 1 ms: 101's long futex waits kept their stacks, its 40 short ones (8 ms in all) and
# 102's short preemptions (2 ms) are summed without stacks; 104 is still blocked at the end (no kernel
# stack taken: /proc's, from the end snapshot; its user stack walked by the loader).
LAZY = (
    OUTPUT.replace("pmuprof-offcpu\t1\n", "pmuprof-offcpu\t3\n")
    .replace("stopped_by\tSIGINT\n", "stopped_by\tSIGINT\nmode\tlazy\nmin_block_us\t1000\n")
    .replace(
        "stat\tustack_scanned\t1\n",
        "stat\tustack_scanned\t1\nstat\tshort\t45\nstat\tlong\t3\n"
        "short\t100\t101\tS\t40\t8000000\tworker\nshort\t100\t102\tR\t5\t2000000\tworker\n",
    )
    .replace("open\t100\t104\tD\t1003000000\ta1\t4\n", "open\t100\t104\tD\t1003000000\ta1\t-61\n")
)


def test_lazy_short_blocks_keep_their_time_under_one_frame():
    out = tool.parse(LAZY.splitlines(True))
    assert (out.mode, out.min_block_us) == ("lazy", 1000) and out.stats["short"] == 45
    assert [w for w in out.waits if w.short][-1] == tool.Wait(100, 102, "R", 5, 2_000_000, 0, -1, "worker", short=True)
    end = {100: {104: ThreadNow(104, "syncer", "D", "io_schedule", ("do_syscall_64", "io_schedule"))}}
    result = fold(out, {100: "server"}, KernelSymbols(KALLSYMS), UserSymbols(MAPS, fake_funcs), {}, end)
    s = result.stacks
    assert s[("server", "[short blocks < 1 ms]", "off-cpu:S")] == 8000
    assert s[("server", "[short blocks < 1 ms]", "off-cpu:R")] == 2000
    assert s[("server", "do_work", "__lll_lock_wait", "do_syscall_64_[k]", "io_schedule_[k]", "off-cpu:D")] == 7000
    assert result.short_us == 10000 and result.total_us == 6000 + 1000 + 2000 + 7000 + 10000
    assert tool.argv("x", [7], 1, "/o")[-2:] == ["--min-block-us", "1000"]


def test_short_blocks_label_grammar():
    from pmuprof.model.labels import is_unnamed, parse_short_blocks, short_blocks_label

    assert short_blocks_label(1000) == "[short blocks < 1 ms]" and short_blocks_label(250) == "[short blocks < 250 us]"
    assert parse_short_blocks("[short blocks < 2 ms]") == 2000 and parse_short_blocks("[short blocks < 250 us]") == 250
    assert parse_short_blocks("[libc.so.6]") is None and is_unnamed(short_blocks_label(1000))


def test_a_thread_blocked_for_the_whole_window_gets_the_stack_the_loader_walked():
    # 105 never ran during the window: blocked (S) at both snapshots, no start record; the loader walked
    # its user stack from /proc/TID/syscall's sp and pc at the end ("idle" line)
    out = tool.parse(LAZY.replace("ustack\ta3\t", "idle\t100\t105\ta1\nustack\ta3\t").splitlines(True))
    assert out.idle == {(100, 105): 0xA1}
    start = {100: {105: ThreadNow(105, "idle", "S", "poll", ("do_syscall_64", "do_poll"))}}
    result = fold(out, {100: "server"}, KernelSymbols(KALLSYMS), UserSymbols(MAPS, fake_funcs), start, start)
    assert (
        result.stacks[("server", "do_work", "__lll_lock_wait", "do_syscall_64_[k]", "do_poll_[k]", "off-cpu:S")]
        == 10000
    )


# Format 5 (wake-ups traced): 101 slept 6 ms on a futex, 2.5 ms of it after its wake-up (waiting for a CPU);
# 102 was preempted 1 ms (runnable all along: no split); its short blocks (3 ms, 1 ms runnable) keep the split;
# 103 slept since before t0, woken 4 ms before the end and still not run (an open record with since 0); 104
# is still asleep at the end (not woken).
WOKEN = """\
pmuprof-offcpu\t5
t0_ns\t1000000000
end_ns\t1010000000
stopped_by\tSIGINT
mode\tlazy
min_block_us\t1000
wakeups\ton
stat\tswitches\t4
stat\twakeups\t3
wait\t100\t101\tS\t2\t6000000\t2500000\ta1\t2\tworker
wait\t100\t102\tR\t1\t1000000\t0\ta3\t-17\tworker
short\t100\t102\tS\t9\t3000000\t1000000\tworker
open\t100\t103\tB\t0\t0\t-1\t1006000000
open\t100\t104\tS\t1007000000\ta1\t4\t0
stack\t2\tffffffff81000710,ffffffff81000610,ffffffff81000510,ffffffff81000410,ffffffff81000310,ffffffff81000210
stack\t4\tffffffff81000610,ffffffff81000810
ustack\ta1\t1\t7f0000001010,555500002020
ustack\ta3\t0\t555500003030
"""


def test_a_woken_block_splits_into_blocked_and_waiting_for_a_cpu():
    out = tool.parse(WOKEN.splitlines(True))
    assert out.wakeups == "on" and out.waits[0].runq_ns == 2_500_000 and out.waits[2].runq_ns == 1_000_000
    assert out.open[0] == tool.Open(100, 103, "B", 0, 0, -1, 1_006_000_000)
    start = {100: {103: ThreadNow(103, "stuck", "S", "poll", ("do_syscall_64", "do_poll"))}}
    result = fold(out, {100: "server"}, KernelSymbols(KALLSYMS), UserSymbols(MAPS, fake_funcs), start, {})
    s = result.stacks
    futex = ("server", "do_work", "__lll_lock_wait", "do_syscall_64_[k]", "__x64_sys_futex_[k]", "futex_wait_[k]")
    futex += ("schedule_[k]",)
    assert s[futex + ("off-cpu:S",)] == 3500 and s[futex + ("off-cpu:W",)] == 2500
    assert s[("server", "[server+0x4000]", "off-cpu:R")] == 1000  # preempted: runnable, not split
    assert s[("server", "[short blocks < 1 ms]", "off-cpu:S")] == 2000
    assert s[("server", "[short blocks < 1 ms]", "off-cpu:W")] == 1000
    before = ("server", "[unknown]", "do_syscall_64_[k]", "do_poll_[k]")  # /proc's view at the start
    assert s[before + ("off-cpu:S",)] == 6000 and s[before + ("off-cpu:W",)] == 4000
    assert s[("server", "do_work", "__lll_lock_wait", "io_schedule_[k]", "off-cpu:S")] == 3000  # still asleep
    assert result.runnable_us == 2500 + 1000 + 4000 and result.before_us == 10000
    assert result.total_us == 6000 + 1000 + 3000 + 10000 + 3000


def test_older_tracer_outputs_still_parse_without_a_split():
    out = tool.parse(OUTPUT.splitlines(True))
    assert out.wakeups == "" and all(w.runq_ns == 0 for w in out.waits) and out.open[0].wake_ns == 0
    assert tool.argv("x", [7], 1, "/o", wakeups=False)[-1] == "--no-wakeup"

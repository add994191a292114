"""The CFI unwinder of pmuprof-offcpu: callers a frame-pointer walk skips under a library without frame
pointers are recovered from that library's .eh_frame (BPF; root only).

progs/nofp_lib.c is built -fomit-frame-pointer, as Debian builds glibc: fp_waiter_a / fp_waiter_b (with
frame pointers) call nofp_wait -> nofp_sleep_inner -> syscall(futex). Walking frame pointers from the
sleep skips nofp_sleep_inner, nofp_wait and the fp_waiter that called them.
"""

from __future__ import annotations


import pytest

from native_support import build_over_nofp_lib
from pmuprof.tools.native import offcpu as tool
from test_offcpu_live import need_offcpu, record_running

SECONDS = 3.0


@pytest.fixture(scope="module")
def unwound(tmp_path_factory):
    need_offcpu()
    tmp = tmp_path_factory.mktemp("unwind")
    exe = build_over_nofp_lib("fp_calls_nofp", tmp)
    out, run, stacks, _ = record_running([str(exe), "60"], tmp / "run", SECONDS)
    return out, run, stacks


def test_callers_under_the_library_are_recovered(unwound):
    _, run, stacks = unwound
    for waiter in ("fp_waiter_a", "fp_waiter_b"):
        # its sleeps in futex; an interrupt that preempts the loop itself leaves a stack of its own (the
        # waiter, then asm_common_interrupt) with nothing under the library to recover
        mine = {s: n for s, n in stacks.items() if waiter in s and "__x64_sys_futex_[k]" in s}
        assert mine, f"{waiter} lost: {list(stacks)[:5]}"
        for stack in mine:
            frames = list(stack)
            at = frames.index(waiter)
            assert frames[at + 1 : at + 3] == ["nofp_wait", "nofp_sleep_inner"], stack
    assert run.offcpu.user_stacks_recovered >= 2, run.offcpu


def test_the_tracer_says_which_frames_it_recovered(unwound):
    out, _, _ = unwound
    parsed = tool.load(out / "offcpu.out")
    # the waiters' sleeps (state S, in futex under the library), not the main thread's sleep, walked at the end
    # (idle: 2 recovered), nor a waiter preempted while it ran (state R): on a crowded host one was preempted
    # with its leaf in nofp_wait itself, a 3-frame stack with 1 caller to recover (seen, 36 us)
    waiters = {w.ustack for w in parsed.waits if w.state == "S"} | {o.ustack for o in parsed.open if o.state == "S"}
    mine = {k: n for k, n in parsed.recovered.items() if k in waiters}
    assert mine and all(n >= 3 for n in mine.values()), parsed.recovered
    for key, n in parsed.recovered.items():
        assert len(parsed.ustacks[key]) > n  # the leaf, the recovered callers, then the frame-pointer walk

"""On-CPU recovered callers without BPF: the tracer's sample lines, the table a capture writes from them,
and the sampler's place in the tracer's command line (the live splice: tests/native/test_oncpu_callers.py)."""

from __future__ import annotations

import os

from pmuprof.capture.offcpu import tracer
from pmuprof.model import callers
from pmuprof.tools.native import offcpu as tool

LEAF, A, B, C, RA, RB = 0x7F0000001010, 0x555500001000, 0x555500002000, 0x555500003000, 0x555500004000, 0x555500005000

OUTPUT = f"""\
pmuprof-offcpu\t4
t0_ns\t1000000000
end_ns\t1010000000
stopped_by\tduration
stat\tsamples\t40
stat\tsamples_fpless\t31
stat\tsamples_lost\t0
sample\t100\t0\t0\t10\t0\t{LEAF:x},{A:x},{C:x}\t1\t{RA:x}
sample\t100\t0\t0\t5\t0\t{LEAF:x},{A:x},{C:x}\t1\t{RA:x}
sample\t100\t0\t0\t7\t0\t{LEAF:x},{B:x},{C:x}\t1\t{RA:x}
sample\t100\t0\t0\t3\t0\t{LEAF:x},{B:x},{C:x}\t1\t{RB:x}
sample\t100\t0\t0\t4\t0\t{LEAF:x},{C:x}\t1\t-
sample\t100\t101\t7ffd1000\t2\t1\t{LEAF:x}\t1\t{RB:x},{C:x}
"""


def test_sample_lines_parse_and_a_stopped_walk_is_keyed_on_thread_and_sp():
    out = tool.parse(OUTPUT.splitlines(keepends=True))
    assert out.stats["samples_fpless"] == 31 and len(out.sampled) == 6
    assert out.sampled[0] == callers.Sample(100, 10, (LEAF, A, C), 1, (RA,))
    assert out.sampled[4].recovered == ()  # the unwinder found nothing
    # the frame pointer held data: perf's walk stops at the leaf, the scan's whole chain is what it takes
    assert out.sampled[5] == callers.Sample(100, 2, (LEAF,), 1, (RB, C), tid=101, sp=0x7FFD1000)


def test_a_key_whose_stacks_disagree_recovers_nothing():
    found = callers.table(tool.parse(OUTPUT.splitlines(keepends=True)).sampled, min_support=1)
    assert found.rows == (
        callers.Row(100, 15, (LEAF, A, C), 1, (RA,)),  # the two A lines agree: one row
        callers.Row(100, 2, (LEAF,), 1, (RB, C), 101, 0x7FFD1000),
    )
    assert (found.recovered, found.ambiguous, found.unrecovered) == (17, 10, 4)  # B: RA 7 times, RB 3 times


def test_a_failed_unwind_under_a_key_makes_it_ambiguous():
    # the path whose frame outgrew the kept stack words is not the one that unwound: no row for either
    sampled = (callers.Sample(100, 20, (LEAF, A, C), 1, (RA,)), callers.Sample(100, 3, (LEAF, A, C), 1, ()))
    found = callers.table(sampled, min_support=1)
    assert (found.rows, found.ambiguous) == ((), 23)


def test_keys_the_reader_cannot_match_are_not_written():
    sampled = (
        callers.Sample(100, 20, (LEAF,), 1, (RA,)),  # a walk key without a return address
        callers.Sample(100, 20, (LEAF, A, C), 4, (RA,)),  # resumes past the key
        callers.Sample(100, 20, (LEAF, A), 1, (RA,), tid=101, sp=0x1000),
    )  # a stopped walk keeps the leaf
    found = callers.table(sampled, min_support=1)
    assert (found.rows, found.unrecovered) == ((), 60)


def test_a_key_seen_too_seldom_is_not_trusted():
    sampled = tool.parse(OUTPUT.splitlines(keepends=True)).sampled
    assert callers.table(sampled, min_support=15).rows  # A: seen 15 times
    found = callers.table(sampled, min_support=16)
    assert (found.rows, found.recovered, found.rare, found.ambiguous) == ((), 0, 17, 10)
    assert callers.MIN_SUPPORT == 10 and callers.table(sampled).rows  # the default: A's 15 are enough


def test_the_table_file_is_what_the_reader_parses(tmp_path):
    path = tmp_path / "recovered-callers.tsv"
    callers.write(
        path, (callers.Row(100, 15, (LEAF, A, C), 2, (RA, RB)), callers.Row(100, 12, (LEAF,), 1, (RB, C), 101, 0xABC0))
    )
    assert path.read_text() == (
        f"{callers.HEADER}\n100\t0\t0\t15\t{LEAF:x},{A:x},{C:x}\t2\t{RA:x},{RB:x}\n"
        f"100\t101\tabc0\t12\t{LEAF:x}\t1\t{RB:x},{C:x}\n"
    )


def test_the_sampler_follows_perfs_frame_pointer_rate(monkeypatch, tmp_path):
    pids = [os.getpid()]
    monkeypatch.setattr(tracer, "offcpu_path", lambda: "/x/pmuprof-offcpu")
    monkeypatch.setattr(tracer, "unavailable", lambda pids: ("", ""))
    monkeypatch.setattr(tracer, "cheap_here", lambda: True)
    on = tracer.plan(tmp_path, pids, {}, 5.0, None, perf_hz=4999)
    assert on.sample_hz == tracer.SAMPLER_MAX_HZ and on.argv[-2:] == ("--sample-hz", str(tracer.SAMPLER_MAX_HZ))
    assert tracer.plan(tmp_path, pids, {}, 5.0, None, perf_hz=99).argv[-1] == "99"
    off = tracer.plan(tmp_path, pids, {}, 5.0, None, perf_hz=0)  # DWARF or LBR call graphs: nothing to recover
    assert off.sample_hz == 0 and "--sample-hz" not in off.argv


def test_perf_records_the_user_sp_only_beside_frame_pointers(tmp_path):
    from pmuprof.tools.perf import argv as perfcmd

    fp = perfcmd.record_argv("perf", perfcmd.RecordSpec(tmp_path / "p", (1,), user_sp=True))
    assert "--user-regs=sp" in fp  # the stopped walks' key (a thread's sp at the leaf)
    assert "--user-regs=sp" not in perfcmd.record_argv("perf", perfcmd.RecordSpec(tmp_path / "p", (1,)))
    dwarf = perfcmd.record_argv("perf", perfcmd.RecordSpec(tmp_path / "p", (1,), call_graph="dwarf", user_sp=True))
    assert "--user-regs=sp" not in dwarf  # perf's DWARF mode takes the registers it needs itself


def test_the_key_length_is_one_constant_in_c_and_python():
    import re
    from pathlib import Path

    native = Path(__file__).resolve().parents[2] / "native"
    found = {}
    for path, name in (
        (native / "offcpu" / "offcpu.h", "OFFCPU_SAMPLE_KEY"),
        (native / "perfdata" / "callers.h", "CALLERS_KEY"),
    ):
        m = re.search(rf"^#define {name} (\d+)", path.read_text(), re.M)
        assert m, (path, name)
        found[name] = int(m.group(1))
    assert set(found.values()) == {callers.KEY}, found

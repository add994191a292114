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
sample\t100\t10\t0\t{LEAF:x},{A:x},{C:x}\t1\t{RA:x}
sample\t100\t5\t0\t{LEAF:x},{A:x},{C:x}\t1\t{RA:x}
sample\t100\t7\t0\t{LEAF:x},{B:x},{C:x}\t1\t{RA:x}
sample\t100\t3\t0\t{LEAF:x},{B:x},{C:x}\t1\t{RB:x}
sample\t100\t4\t0\t{LEAF:x},{C:x}\t1\t-
sample\t100\t2\t1\t{LEAF:x},{A:x},{C:x}\t1\t{RB:x}
"""


def test_sample_lines_parse_and_a_scanned_chain_has_no_key():
    out = tool.parse(OUTPUT.splitlines(keepends=True))
    assert out.stats["samples_fpless"] == 31 and len(out.sampled) == 6
    assert out.sampled[0] == callers.Sample(100, 10, (LEAF, A, C), 1, (RA,))
    assert out.sampled[4].recovered == ()  # the unwinder found nothing
    assert out.sampled[5].key == () and out.sampled[5].recovered == ()  # perf's walk is not the scanned chain


def test_a_key_whose_stacks_disagree_recovers_nothing():
    found = callers.table(tool.parse(OUTPUT.splitlines(keepends=True)).sampled, min_support=1)
    assert found.rows == (callers.Row(100, 15, (LEAF, A, C), 1, (RA,)),)  # the two A lines agree: one row
    assert (found.recovered, found.ambiguous, found.unrecovered) == (15, 10, 6)  # B: RA 7 times, RB 3 times


def test_a_key_seen_too_seldom_is_not_trusted():
    sampled = tool.parse(OUTPUT.splitlines(keepends=True)).sampled
    assert callers.table(sampled, min_support=15).rows  # A: seen 15 times
    found = callers.table(sampled, min_support=16)
    assert (found.rows, found.recovered, found.rare, found.ambiguous) == ((), 0, 15, 10)
    assert callers.MIN_SUPPORT == 10 and callers.table(sampled).rows  # the default: A's 15 are enough


def test_the_table_file_is_what_the_reader_parses(tmp_path):
    path = tmp_path / "recovered-callers.tsv"
    callers.write(path, (callers.Row(100, 15, (LEAF, A, C), 2, (RA, RB)),))
    assert path.read_text() == f"{callers.HEADER}\n100\t15\t{LEAF:x},{A:x},{C:x}\t2\t{RA:x},{RB:x}\n"


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

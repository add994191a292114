"""A report read from a perf.data without inline frames says so: perf script (pmuprof-perfdata not built,
declining the file, or --symfs) or PMUPROF_NO_INLINE gives user frames no DWARF inline chain, and a MariaDB
10.6+ latch table then says "page latch or index tree latch" where addr2line -i names one latch.
"""

from __future__ import annotations

from pmuprof.analysis.analyse import INLINE_FEATURE, inline_off

PERF_SCRIPT = ("/usr/bin/perf", "script", "-i", "perf.data", "-F", "comm,pid,tid,ip,sym,symoff,dso", "--no-inline")
NATIVE = ("/opt/pmuprof-perfdata", "--meta", "meta.json", "--inline", "--process-names", "perf.data")


def test_the_report_says_when_a_perf_data_was_read_without_inline_frames() -> None:
    assert inline_off(NATIVE) == [] and inline_off(()) == []  # folded or perf script text: nothing was read
    (off,) = inline_off(PERF_SCRIPT)
    assert off.feature == INLINE_FEATURE and "perf script" in off.why and "make -C native" in off.fix
    (off,) = inline_off(PERF_SCRIPT + ("--symfs=/tmp/kept",))
    assert "--symfs" in off.why
    (off,) = inline_off(NATIVE[:3] + NATIVE[4:])
    assert "PMUPROF_NO_INLINE" in off.why

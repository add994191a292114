"""perf argv builders: per-CPU vs per-thread, call graphs, cgroups, size bounds."""

from pathlib import Path

import pytest

from pmuprof.tools.perf import argv as perfcmd
from pmuprof.tools.perf.argv import RecordSpec


def test_per_cpu_record_is_system_wide_with_frequency_and_fp():
    argv = perfcmd.record_argv("perf", RecordSpec(Path("d"), (12,), 99))
    assert argv[:4] == ["perf", "record", "-F", "99"]
    assert "-a" in argv and "-p" not in argv and "-g" in argv
    assert argv[-2:] == ["-o", "d"]


def test_per_thread_record_names_all_pids():
    argv = perfcmd.record_argv("perf", RecordSpec(Path("d"), (12, 34), mode="per-thread"))
    assert argv[argv.index("-p") + 1] == "12,34" and "-a" not in argv


def test_dwarf_copies_32k_of_stack_and_cgroup_is_used_per_cpu():
    argv = perfcmd.record_argv("perf", RecordSpec(Path("d"), (1,), call_graph="dwarf", cgroup="system.slice/m.service"))
    assert argv[argv.index("--call-graph") + 1] == "dwarf,32768"
    assert argv[argv.index("-G") + 1] == "system.slice/m.service"


def test_max_size_bounds_disk_use():
    argv = perfcmd.record_argv("perf", RecordSpec(Path("d"), (1,), max_size_bytes=10 * 1024 * 1024))
    assert argv[argv.index("--max-size") + 1] == "10240K"


def test_unknown_modes_are_rejected():
    with pytest.raises(ValueError):
        perfcmd.record_argv("perf", RecordSpec(Path("d"), (1,), mode="bogus"))
    with pytest.raises(ValueError):
        perfcmd.call_graph_args("bogus")


def test_stat_cgroup_is_repeated_per_event():
    argv = perfcmd.stat_argv("perf", Path("s.csv"), (1,), ("task-clock", "cycles"), "per-cpu", "g")
    assert argv[argv.index("-G") + 1] == "g,g"
    assert perfcmd.stat_argv("perf", Path("s"), (5, 6), ("a",), "per-thread")[-2:] == ["-p", "5,6"]


def test_script_uses_minimal_fields_no_inline_and_pid_filter():
    argv = perfcmd.script_argv("perf", Path("p.data"), (7, 8))
    assert "--no-inline" in argv and perfcmd.SCRIPT_FIELDS in argv and "--pid=7,8" in argv


def test_estimate_grows_with_dwarf_and_duration():
    fp = perfcmd.estimate_bytes(99, 16, 30, "fp")
    dwarf = perfcmd.estimate_bytes(99, 16, 30, "dwarf")
    assert dwarf > 20 * fp and perfcmd.estimate_bytes(99, 16, 60, "fp") > fp

"""capture records off-CPU time by default where the tracer is cheap (lazy mode); record keeps it opt-in."""

from __future__ import annotations

import os

from pmuprof.capture.offcpu import tracer
from pmuprof.cli.capture import capture_cmd
from pmuprof.cli.record import COMMAND as record_cmd


def _default(cmd) -> object:
    return next(p for p in cmd.params if p.name == "off_cpu").default


def test_capture_defaults_to_auto_and_record_to_off():
    assert _default(capture_cmd) is None  # --off-cpu / --no-off-cpu still force it either way
    assert _default(record_cmd) is False


def test_auto_runs_the_tracer_only_where_it_runs_and_is_cheap(monkeypatch, tmp_path):
    pids = [os.getpid()]
    monkeypatch.setattr(tracer, "offcpu_path", lambda: "/x/pmuprof-offcpu")
    monkeypatch.setattr(tracer, "unavailable", lambda pids: ("", ""))
    monkeypatch.setattr(tracer, "cheap_here", lambda: True)
    on = tracer.plan(tmp_path, pids, {pids[0]: "me"}, 5.0, None)
    assert on.requested and on.argv[0] == "/x/pmuprof-offcpu" and "--min-block-us" in on.argv
    assert "--eager" not in on.argv  # the default: lazy, stacks for blocks of 1 ms or more
    assert "--eager" in tracer.plan(tmp_path, pids, {}, 5.0, True).argv  # --off-cpu: every block's stacks
    monkeypatch.setattr(tracer, "cheap_here", lambda: False)  # eager mode only: ~3 us per switch
    assert not tracer.plan(tmp_path, pids, {}, 5.0, None).requested
    assert tracer.plan(tmp_path, pids, {}, 5.0, True).argv  # asked for: runs anyway
    monkeypatch.setattr(tracer, "cheap_here", lambda: True)
    monkeypatch.setattr(tracer, "unavailable", lambda pids: ("not root: BPF tracing needs root", "run as root"))
    assert not tracer.plan(tmp_path, pids, {}, 5.0, None).requested  # off, no warning
    asked = tracer.plan(tmp_path, pids, {}, 5.0, True)
    assert asked.requested and not asked.argv and asked.why_not.startswith("not root")  # asked: says why not


def test_cheap_here_reads_the_kernel_btf(monkeypatch, tmp_path):
    btf = tmp_path / "vmlinux"
    monkeypatch.setattr(tracer, "BTF", btf)
    assert not tracer.cheap_here()  # no BTF
    btf.write_bytes(b"\x00btf_trace_sched_switch\x00")
    assert not tracer.cheap_here()
    btf.write_bytes(b"\x00btf_trace_sched_exit_tp\x00")
    assert tracer.cheap_here()

"""The healthy verdict names what a DBA can act on: the busiest server function, not a kernel IRQ frame."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from rules.conftest import FIXTURES, load_fixture

from pmuprof.errors import RuleError
from pmuprof.findings.busiest import busiest
from pmuprof.findings.engine import diagnose
from pmuprof.findings.knowledge import generic_frames
from pmuprof.findings.patterns import PatternSet
from pmuprof.model.profile import Leaf
from pmuprof.pipeline import build_profile
from pmuprof.report import build_payload, write_outputs
from pmuprof.report.markdown import render_markdown
from pmuprof.report.summary import verdict_line

SERVER = "mysqld;start_thread;pfs_spawn_thread;handle_one_connection;do_command;dispatch_command;mysql_execute_command"
IRQ = "asm_sysvec_apic_timer_interrupt_[k];sysvec_apic_timer_interrupt_[k];__irq_exit_rcu_[k];_raw_spin_unlock_irqrestore_[k]"
# The hottest self frame is a kernel IRQ frame (50 of 100 samples), taken in row_search_mvcc under JOIN::exec.
IRQ_STACKS = f"""\
{SERVER};JOIN::exec;sub_select;row_search_mvcc;{IRQ} 50
{SERVER};JOIN::exec;sub_select;row_search_mvcc 20
{SERVER};JOIN::exec;sub_select;evaluate_join_record 10
{SERVER};JOIN::optimize;make_join_statistics 12
mysqld;start_thread;pfs_spawn_thread;handle_one_connection;do_command;my_net_read_packet;__libc_recv;entry_SYSCALL_64_[k];do_syscall_64_[k];__x64_sys_recvfrom_[k] 8
"""


def _profile(tmp_path: Path, text: str = IRQ_STACKS):
    path = tmp_path / "stacks.folded"
    path.write_text(text)
    return build_profile(path)


def test_a_kernel_irq_leaf_is_named_with_the_server_function_above_it(tmp_path):
    b = busiest(_profile(tmp_path))
    assert (b.function, b.samples, b.total) == ("JOIN::exec", 80, 100)  # not do_command (100) nor the IRQ frame
    assert (b.path_end, b.path_end_samples) == ("row_search_mvcc", 70)  # sub_select passes on: row_search_mvcc ends it
    assert (b.leaf, b.leaf_kind, b.leaf_samples) == ("_raw_spin_unlock_irqrestore_[k]", "kernel", 50)
    assert b.leaf_entry == "asm_sysvec_apic_timer_interrupt_[k]" and b.leaf_under == "row_search_mvcc"


def test_the_healthy_verdict_says_it_in_every_writer(tmp_path):
    profile = _profile(tmp_path)
    diagnosis = diagnose(profile, rules=())
    assert diagnosis.top is None and diagnosis.busiest is not None
    v = build_payload(profile, diagnosis).verdict
    assert (
        v["healthy"] and v["busy"]["function"] == "JOIN::exec" and v["busy"]["share"] == "80.0 % inclusive, ±7.8 points"
    )
    assert v["busy"]["link"] == "#view=sandwich&focus=JOIN%3A%3Aexec&search=%5EJOIN%3A%3Aexec%24"
    html = write_outputs(profile, diagnosis, tmp_path / "out")["html"].read_text()
    head = html[html.index('<section id="verdict"') : html.index('<section id="summary"')]
    assert (
        "most time in <code>JOIN::exec</code> (80.0 % inclusive, ±7.8 points) → … → <code>row_search_mvcc</code>"
        in head
    )
    assert (
        "the most self time is kernel work <code>_raw_spin_unlock_irqrestore</code> in "
        "<code>asm_sysvec_apic_timer_interrupt</code> (50.0 % self, ±9.6 points) under <code>row_search_mvcc</code>"
    ) in head
    assert "_raw_spin_unlock_irqrestore_[k]" not in head.split("flame graph")[0]  # never named as the one fact
    md = render_markdown(build_payload(profile, diagnosis))
    assert (
        "Most time in `JOIN::exec` (80.0 % inclusive, ±7.8 points) → … → `row_search_mvcc` (70.0 %, ±8.8 points)" in md
    )
    assert (
        verdict_line(diagnosis, profile.total)
        == "OK: no rule fired (100 samples); most time in JOIN::exec (80.0 % inclusive, ±7.8 points)"
    )


def test_a_run_with_a_cause_has_no_busiest(tmp_path):
    profile, _ = load_fixture(FIXTURES / "index-dive-cost" / "fire-mariadb102-ranges.folded")
    diagnosis = diagnose(profile)
    assert diagnosis.top is not None and diagnosis.busiest is None
    assert "busy" not in build_payload(profile, diagnosis).verdict


def test_library_code_is_told_by_its_leaf_dso(tmp_path):
    text = f"{SERVER};JOIN::exec;ha_compress_blob;zlib_deflate_slow 70\n{SERVER};JOIN::exec;ha_compress_blob 30\n"
    profile = _profile(tmp_path, text)
    assert busiest(profile).leaf == ""  # nothing says zlib_deflate_slow is not the server's: a server leaf
    profile = replace(profile, leaves=(Leaf("/usr/lib/x86_64-linux-gnu/libc.so.6", "zlib_deflate_slow", 16, 70),))
    b = busiest(profile)
    assert b.function == "JOIN::exec" and b.path_end == "ha_compress_blob"
    assert (b.leaf, b.leaf_kind, b.leaf_under) == ("zlib_deflate_slow", "library", "ha_compress_blob")


def test_the_generic_frames_are_data(tmp_path):
    profile = _profile(tmp_path)
    table = generic_frames()
    assert table.server.matches("Prepared_statement::execute_loop") and table.runtime.matches("__libc_recv_[i]")
    assert (
        busiest(profile, replace(table, server=PatternSet.of(("start_thread", "pfs_spawn_thread")))).function
        == "handle_one_connection"
    )  # without the list, the connection loop would be "the busiest function"
    bad = tmp_path / "generic-frames.yaml"
    bad.write_text("server: [do_command]\nkernl_entry: []\n")
    with pytest.raises(RuleError, match=r"generic-frames.yaml:2: unknown key 'kernl_entry'"):
        generic_frames(bad)


def test_the_busiest_processlist_state_when_the_threads_were_joined(tmp_path):
    tables = [
        {
            "name": "state",
            "rows": [
                {"key": "(not a connection)", "samples": 60, "share": 0.6, "function": "buf_flush_page_cleaner"},
                {"key": "Sending data", "samples": 30, "share": 0.3, "function": "row_search_mvcc"},
                {"key": "statistics", "samples": 10, "share": 0.1, "function": ""},
            ],
        }
    ]
    profile = replace(_profile(tmp_path), threads={"polled": True, "tables": tables})
    b = busiest(profile)
    assert (b.state, b.state_share, b.state_function) == ("Sending data", 0.3, "row_search_mvcc")
    tables[0]["rows"][1]["function"] = "execute_sqlcom_select"  # a generic frame sets nothing apart
    assert busiest(replace(profile, threads={"polled": True, "tables": tables})).state_function == ""
    tables[0]["rows"][1]["function"] = "row_search_mvcc"
    v = build_payload(profile, diagnose(profile, rules=())).verdict
    assert (
        "the busiest processlist state is `Sending data` (30.0 % of the samples, mostly in `row_search_mvcc`)"
        in v["busy"]["sentence"]
    )


def test_a_real_healthy_capture_names_a_server_function():
    """MariaDB 11.4.5 point selects: the hottest self frame is _raw_spin_unlock_irqrestore_[k] (12.9 %) in sendto."""
    profile, _ = load_fixture(FIXTURES / "healthy" / "mariadb114-point-select.folded")
    diagnosis = diagnose(profile)
    b = diagnosis.busiest
    assert diagnosis.top is None and b is not None
    assert (b.function, b.samples, b.total) == ("JOIN::optimize", 972, 4116)
    assert (b.leaf, b.leaf_entry, b.leaf_via) == (
        "_raw_spin_unlock_irqrestore_[k]",
        "__x64_sys_sendto_[k]",
        "__libc_send_[i]",
    )

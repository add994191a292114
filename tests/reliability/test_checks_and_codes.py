"""Items 6 and 10: options are checked before anything long, misleading inputs get a line that names
them, and the exit codes are docs/usage.md's table."""

from __future__ import annotations

import os
import re
import time

import pytest

from .conftest import one_line
from helpers import REPO

from pmuprof import errors
from pmuprof.capture.proc.host import has_lbr
from pmuprof.cli.exitcodes import exit_codes
from pmuprof.cli.main import EXIT_INTERNAL
from pmuprof.workflows.schedule import EXIT_CRITICAL, EXIT_WARNING


@pytest.mark.parametrize(
    "option,value,needle",
    [
        ("-d", "99999h", "--duration 99999h is out of range"),
        ("--interval", "0", "--interval 0 is out of range"),
        ("--cooldown", "30x", "duration '30x'"),
        ("--cooldown", "30d", "--cooldown 30d is out of range"),
        ("-F", "0", "--frequency 0 is out of range"),
    ],
)
def test_watch_checks_its_options_before_polling(pmuprof, tmp_path, option, value, needle):
    t0 = time.monotonic()
    res = pmuprof("watch", "-p", os.getpid(), "--trigger", "cpu>1", "--no-mysql", "-o", tmp_path / "w", option, value)
    one_line(res, 2, needle)
    # a watch that polled would run until stopped: the bound is a hang detector for a starved worker, not a speed
    assert time.monotonic() - t0 < 60 and not (tmp_path / "w").exists()


def test_kthreadd_is_refused_like_every_kernel_thread(pmuprof, tmp_path):
    one_line(pmuprof("capture", "-p", 2, "--no-mysql", "-o", tmp_path / "r"), 4, "pid 2 is a kernel thread")


@pytest.mark.skipif(has_lbr(), reason="this CPU has LBR")
def test_lbr_without_lbr_is_refused_up_front(pmuprof, tmp_path):
    one_line(
        pmuprof("capture", "-p", os.getpid(), "--call-graph", "lbr", "--no-mysql", "-o", tmp_path / "r"),
        5,
        "Last Branch Record",
    )


def test_misleading_inputs_are_named(pmuprof, tmp_path):
    one_line(pmuprof("report", "/dev/null"), 3, "not a regular file (a character device)")
    noise = tmp_path / "perf.data"
    noise.write_bytes(os.urandom(65536) + b"\0")
    one_line(pmuprof("report", noise, "-o", tmp_path / "o"), 3, "not a perf.data")
    big = tmp_path / "big.folded"
    big.write_text("mysqld;a 9223372036854775807\nmysqld;b 1\n")
    one_line(pmuprof("export", big, "-f", "pprof", "-o", tmp_path / "x.pb.gz"), 3, "more than 2^63-1")
    folded = tmp_path / "in.folded"
    folded.write_text("mysqld;ut_delay 5\n")
    not_elf = tmp_path / "mariadbd"
    not_elf.write_bytes(b"#!/bin/sh\n")
    one_line(pmuprof("annotate", folded, "--symbol", "ut_delay", "--binary", not_elf), 2, "not an ELF file")


def test_doctor_checks_the_filesystem_of_a_new_output_directory(pmuprof, tmpfs):
    fs = tmpfs(8)
    res = pmuprof("doctor", "--no-mysql", "-o", fs / "new" / "dir")
    line = next(line for line in res.out.splitlines() if "free disk" in line)
    assert str(fs) in line and "GiB free" in line


def _usage_codes() -> dict[int, str]:
    text = (REPO / "docs" / "usage.md").read_text()
    table = text[text.index("| exit | meaning |") :]
    codes: dict[int, str] = {}
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            break
        first, meaning = line.strip("|").split("|", 1)
        for code in re.findall(r"\d+", first):
            codes[int(code)] = meaning.strip()
    return codes


def test_the_exit_codes_are_the_usage_table():
    codes = _usage_codes()
    classes = {
        errors.UsageError: "usage",
        errors.InputError: "bad input",
        errors.TargetError: "target",
        errors.PerfError: "perf",
        errors.ResourceError: "disk",
        errors.RuleError: "rule file",
        errors.HelperError: "native helper",
    }
    for cls, word in classes.items():
        assert word in codes[cls.exit_code], (cls.__name__, cls.exit_code)
    assert "internal error" in codes[EXIT_INTERNAL] and "warning" in codes[EXIT_WARNING]
    assert {129, 130, 143} <= set(codes) and EXIT_CRITICAL in codes and 0 in codes
    raised = {c.exit_code for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.PmuprofError)}
    assert raised <= set(codes)
    assert set(dict(exit_codes())) <= set(codes)  # every code `pmuprof --help` lists (9: doctor --strict)

"""Item 7: a perf.data that a full disk cut off (perf wrote its header, a partial last record and no feature
table) is repaired so perf script reads its samples instead of dying of SIGBUS ("perf script failed: no
message")."""

from __future__ import annotations

import os
import struct
import subprocess

from helpers import need_perf

from pmuprof.tools.perf import repair


def _script(perf: str, data) -> subprocess.CompletedProcess:
    return subprocess.run([perf, "script", "-i", str(data)], capture_output=True, text=True, timeout=120)


def _unreadable(perf: str, data) -> bool:
    """perf script fails on it (SIGBUS), or loops (perf 6.1 does on a record cut short: 0.5 s is its
    whole run on the intact file)."""
    try:
        return subprocess.run([perf, "script", "-i", str(data)], capture_output=True, timeout=30).returncode != 0
    except subprocess.TimeoutExpired:
        return True


def test_a_missing_feature_table_is_dropped_and_the_samples_stay_readable(tmp_path):
    perf = need_perf()
    data = tmp_path / "perf.data"
    subprocess.run(
        [
            perf,
            "record",
            "-g",
            "-F",
            "499",
            "-o",
            str(data),
            "--",
            "sh",
            "-c",
            "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done",
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    whole = _script(perf, data)
    assert whole.returncode == 0 and whole.stdout.strip()
    with open(data, "rb") as fh:
        head = fh.read(104)
    offset, size = struct.unpack_from("<QQ", head, 40)
    assert any(head[72:104]), "perf wrote no features: nothing to test"
    cut = offset + size - 5  # what a full disk leaves: a record cut short, then no feature table,
    os.truncate(data, cut)  # and the header perf writes at exit saying the data runs to the end
    with open(data, "r+b") as fh:
        fh.seek(40)
        fh.write(struct.pack("<QQ", offset, cut - offset))
    assert _unreadable(perf, data)
    repaired = repair.finish_header(data)
    assert 0 < repaired < cut - offset
    assert repair.finish_header(data) == 0  # once
    fixed = _script(perf, data)
    assert fixed.returncode == 0, fixed.stderr
    # every sample but (at most) the one cut short
    assert whole.stdout.count("\n\n") - 1 <= fixed.stdout.count("\n\n") <= whole.stdout.count("\n\n")

"""recovered-callers.tsv as model/callers.py writes it is what pmuprof-perfdata --callers reads, on a real
perf.data with user sp (no BPF: the rows are made here from the recording's own chains).

progs/fp_spins_nofp.c under ``perf record -g --user-regs=sp``: thread a's ticks in nofp_spin show
``fp_outer_a`` above the leaf (fp_spinner_a skipped), thread d's in nofp_spin_clobber the leaf alone. Rows
keyed on those chains (walk rows) and on thread d's (tid, sp, leaf) (stopped-walk rows) must give back
exactly those samples, with the frames named.
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest

import perfdump
from helpers import need_perf
from native_support import build_over_nofp_lib, native_binary
from pmuprof.model import callers

SECONDS = 1.5


def _symbols(exe) -> dict[str, int]:
    out = subprocess.run(["nm", str(exe)], capture_output=True, text=True, check=True).stdout
    return {parts[2]: int(parts[0], 16) for parts in (line.split() for line in out.splitlines()) if len(parts) == 3}


def _bias(pid: int, exe) -> int:
    """The executable's load bias: the start of its mapping at file offset 0 (a PIE)."""
    for line in open(f"/proc/{pid}/maps"):
        fields = line.split()
        if len(fields) >= 6 and fields[5] == str(exe) and int(fields[2], 16) == 0:
            return int(fields[0].split("-")[0], 16)
    raise AssertionError(f"{exe} not mapped in {pid}")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    perf = need_perf()
    tmp = tmp_path_factory.mktemp("callers-reader")
    exe, data = build_over_nofp_lib("fp_spins_nofp", tmp), tmp / "perf.data"
    prog = subprocess.Popen([str(exe), "30"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.2)
        bias = _bias(prog.pid, exe)
        rec = subprocess.run(
            [
                perf,
                "record",
                "-q",
                "-g",
                "--user-regs=sp",
                "-F",
                "999",
                "-p",
                str(prog.pid),
                "-o",
                str(data),
                "--",
                "sleep",
                str(SECONDS),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        prog.kill()
        prog.wait()
    if rec.returncode != 0 or not data.is_file():
        pytest.skip(f"perf record --user-regs does not work here: {rec.stderr.strip()[-200:]}")
    dump = subprocess.run([perf, "script", "-D", "-i", str(data)], capture_output=True, timeout=120, check=True).stdout
    syms = {name: bias + addr for name, addr in _symbols(exe).items()}
    return tmp, data, perfdump.samples(dump), syms, prog.pid


def _in(syms, name: str, addr: int) -> bool:
    """addr is inside function name (the next symbol up is past it)."""
    start = syms[name]
    return start <= addr < min((a for a in syms.values() if a > start), default=start + 4096)


def test_the_reader_splices_what_the_writer_wrote(recorded):
    tmp, data, raw, syms, pid = recorded
    walk = [
        s
        for s in raw
        if s.pid == pid
        and len(s.user) >= 2
        and _in(syms, "fp_outer_a", s.user[1] - 1)
        and not _in(syms, "fp_spinner_a", s.user[0])
    ]
    stopped = [s for s in raw if s.pid == pid and len(s.user) == 1 and s.sp is not None]
    assert len(walk) > 20 and len(stopped) > 20, (len(walk), len(stopped))
    rows = {}
    for s in walk:  # the caller the walk skipped: fp_spinner_a (a return address inside it)
        rows[(0, 0, s.user[:4])] = callers.Row(pid, 1, s.user[:4], 1, (syms["fp_spinner_a"] + 1,))
    for s in stopped:  # the whole chain of thread d: fp_clobberer, fp_outer_d
        rows[(s.tid, s.sp, s.user)] = callers.Row(
            pid, 1, s.user, 1, (syms["fp_clobberer"] + 1, syms["fp_outer_d"] + 1), s.tid, s.sp
        )
    table = tmp / "recovered-callers.tsv"
    callers.write(table, rows.values())
    meta = tmp / "meta.json"
    res = subprocess.run(
        [
            str(native_binary("pmuprof-perfdata")),
            "--pid",
            str(pid),
            "--callers",
            str(table),
            "--meta",
            str(meta),
            str(data),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "not understood" not in res.stderr, res.stderr
    folded = {line.rpartition(" ")[0]: int(line.rpartition(" ")[2]) for line in res.stdout.splitlines()}
    spliced_walk = sum(n for s, n in folded.items() if "fp_outer_a;fp_spinner_a;nofp_spin" in s)
    spliced_stopped = sum(
        n for s, n in folded.items() if s.startswith("fp_spins_nofp;fp_outer_d;fp_clobberer;nofp_spin_clobber")
    )
    assert spliced_walk == len(walk) and spliced_stopped == len(stopped), (spliced_walk, spliced_stopped)
    assert json.loads(meta.read_text())["perf_data"]["recovered_samples"] == len(walk) + len(stopped)

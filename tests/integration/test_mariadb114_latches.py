"""Latch attribution by inline chain on a real MariaDB 11.4.5 (DWARF, frame pointers) under a write load.

10.6+ InnoDB inlines its acquirers: the spin in ssux_lock_impl<true>::rd_wait is called from
btr_cur_t::search_leaf for the index tree latch and for page latches alike, and from buf_page_get_gen
for page latches. pmuprof's latch table must split them as binutils' addr2line -i does on the same
samples: the test computes both from one capture's perf.data.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from addr2line_truth import inline_chains
from helpers import need_perf

WAITS = {"ssux_lock_impl<true>::rd_wait", "ssux_lock_impl<true>::wr_wait", "srw_mutex_impl<true>::wait_and_lock"}
_FRAME = re.compile(r"^\s+(?P<addr>[0-9a-f]+) (?P<sym>.*?)(\+0x[0-9a-f]+)? \((?P<dso>[^()]*)\)$")


def _truth_latch(chain: list[str]) -> str:
    """The latch addr2line's chain at the wait's call site names, by the server's own function names."""
    if any(re.match(r"mtr_t::(s_lock|x_lock|u_lock|index_lock_upgrade)\(", f) for f in chain):
        return "index_lock"  # mtr_t's index-latch members (their only latch argument is sux_lock<ssux_lock>*)
    if any(f.startswith("lock_sys_t::") for f in chain):
        return "lock_sys_latch_mariadb"
    if any(f.startswith("sux_lock<ssux_lock_impl<true> >::") for f in chain) and any(
        f.startswith("buf_page_get_") for f in chain
    ):
        return "buf_block_lock"
    return "other"


def _truth(data: Path, pid: int, exe: Path) -> tuple[Counter[str], str]:
    """Spin samples per latch: the leaf is a wait function, its caller's return address - 1 goes to addr2line;
    and what perf script said when it stopped before the file's end ("" when it read it all)."""
    done = subprocess.run(
        [need_perf(), "script", "-i", str(data), "-F", "pid,ip,sym,dso", "--no-inline", "--pid", str(pid)],
        capture_output=True,
        text=True,
        timeout=300,
        errors="replace",
    )
    script = done.stdout
    # perf 6.1 stops at a KSYMBOL record it cannot process ("failed to process type: 17 [Bad address]"): a
    # BPF program another test loaded while this capture recorded the whole host (per-CPU mode)
    stopped = next((line for line in done.stderr.splitlines() if "failed to process type" in line), "")
    calls: list[int] = []
    for block in script.split("\n\n"):
        frames = [m for m in (_FRAME.match(line) for line in block.splitlines()) if m]
        user = [m for m in frames if not m["dso"].startswith("[kernel")]
        if len(user) >= 2 and user[0]["sym"] in WAITS and user[1]["dso"] == str(exe):
            calls.append(int(user[1]["addr"], 16) - 1)
    chains = inline_chains(exe, calls)
    return Counter(_truth_latch(chains[c]) for c in calls), stopped


def test_write_load_latches_split_as_addr2line_does(mariadb114, mariadb114_spin200):
    exe = Path(f"/proc/{mariadb114.pid}/exe").resolve()
    out = mariadb114_spin200  # 16 writers at delay 200 (tests/integration/conftest.py)
    reader = json.loads((out / "analysis.json").read_text())["reader_argv"]
    # without pmuprof-perfdata the capture's perf script names no inlined acquirer: "page or index latch"
    assert "--inline" in reader, f"perf.data was read without inline frames: {reader[:2]} (make -C native)"
    truth, stopped = _truth(out / "perf.data", mariadb114.pid, exe)
    rows = [r for r in json.loads((out / "findings.json").read_text())["latches"] if r["process"] == "mariadbd"]
    ours = Counter({r["latch"]: r["kinds"].get("spin", 0) for r in rows})
    print(f"addr2line -i: {dict(truth)}; pmuprof spin samples by latch: {dict(ours)}; perf script: {stopped or 'all'}")
    assert sum(truth.values()) >= 100, truth  # 16 writers at delay 200 spin for a third of the samples
    ambiguous = sum(n for latch, n in ours.items() if "|" in latch)
    assert ambiguous <= 0.05 * sum(ours.values()), ours  # DWARF leaves no 'page or index latch' guess
    if stopped:  # seen once in six whole-suite runs: perf script read 4,704 of the file's 7,974 samples
        pytest.skip(f"perf script stopped before the end of perf.data ({stopped}): no truth for the whole window")
    for latch in ("index_lock", "buf_block_lock", "lock_sys_latch_mariadb"):
        want = truth[latch]
        # the same samples read two ways: apart only where a stack is cut or a sample has no caller frame
        assert abs(ours[latch] - want) <= max(5, 0.1 * want), (latch, ours, truth)

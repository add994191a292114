"""Live: perf record -e cpu-clock on a PAUSE loop and an MFENCE loop, then skid-correct the leaf samples."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from native_support import PROGS, compile_prog, elf_symbols, helper_binary, need_features, run_helper

LEAF = re.compile(r"^\s*[0-9a-f]+\s+(\S+)\+0x([0-9a-f]+)\s+\((.*)\)\s*$")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    perf = shutil.which("perf")
    if not perf:
        pytest.skip("perf is not installed (apt-get install linux-perf)")
    if os.geteuid() != 0:
        pytest.skip("perf record on a child needs root or perf_event_paranoid <= 1 here")
    helper = helper_binary()
    need_features(helper, "elfutils", "capstone")
    tmp = tmp_path_factory.mktemp("live")
    exe = compile_prog(PROGS / "spin_live.c", tmp / "spin", "gcc", "-O2")
    data = tmp / "perf.data"
    rec = subprocess.run(
        [perf, "record", "-q", "-e", "cpu-clock", "-F", "999", "-o", str(data), "--", str(exe), "2"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if rec.returncode != 0:
        pytest.skip(f"perf record failed here: {rec.stderr.strip()[-200:]}")
    script = subprocess.run(
        [perf, "script", "-i", str(data), "-F", "ip,sym,symoff,dso"], capture_output=True, text=True, timeout=60
    ).stdout
    counts: dict[tuple[str, int], int] = {}
    for line in script.splitlines():
        m = LEAF.match(line)
        if m and m.group(3) == str(exe):
            key = (m.group(1), int(m.group(2), 16))
            counts[key] = counts.get(key, 0) + 1
    rc, out = run_helper(
        helper,
        "skid",
        "--binary",
        str(exe),
        "--hot-only",
        stdin="".join(f"{s}\t{o:x}\t{c}\n" for (s, o), c in counts.items()),
    )
    assert rc == 0, out
    return exe, elf_symbols(exe), out


def _function(out, name):
    fn = [f for f in out["functions"] if f["symbol"] == name][0]
    if fn["samples"] < 200:  # cpu-clock only samples while on CPU: a saturated host starves the loop
        pytest.skip(f"only {fn['samples']} samples of {name}: host too busy to judge")
    return fn


def test_pause_loop_raw_after_pause_corrected_on_pause(recorded):
    exe, syms, out = recorded
    fn = _function(out, "pause_spin")
    after = syms["live_pause_after"][0]
    raw_after = sum(i["raw"] for i in fn["instructions"] if int(i["address"], 16) == after)
    on_pause = sum(i["corrected"] for i in fn["instructions"] if i["kind"] == "pause")
    raw_on_pause = sum(i["raw"] for i in fn["instructions"] if i["kind"] == "pause")
    # perf charges most of the stall to what follows (AMD Zen4: >= 90 %; Intel Xeon: 84 %, 16 % on the PAUSE
    # itself), and correction puts it back on the PAUSE
    assert raw_after >= 0.6 * fn["samples"] and raw_after > 2 * raw_on_pause, fn
    assert on_pause >= 0.9 * fn["samples"], fn


def test_mfence_loop_corrected_on_the_fence(recorded):
    exe, syms, out = recorded
    fn = _function(out, "fence_spin")
    after = syms["live_fence_after"][0]
    raw_after = sum(i["raw"] for i in fn["instructions"] if int(i["address"], 16) == after)
    fence = [i for i in fn["instructions"] if i["kind"] == "fence"][0]
    # Measured (cpu-clock): Zen4 VM ~63 % on mfence+1, ~31 % on mfence+2, ~4 % on the fence; Intel Xeon VM
    # 74 %, 14 %, 7 %. mfence+1 is `add $1,%rax`, a one-cycle register op: the samples on it and on the
    # instruction after it move (the algorithm passes one such op), so the fence ends with exactly its own
    # raw samples plus those two, and is the hottest instruction.
    at = fn["instructions"].index(fence)
    moved = [i for i in fn["instructions"][at + 1 : at + 3] if i["raw"] and not i["corrected"]]
    assert fence["corrected"] == fence["raw"] + sum(i["raw"] for i in moved) and raw_after <= sum(
        i["raw"] for i in moved
    )
    assert raw_after >= 0.5 * fn["samples"], fn
    assert fence["corrected"] == max(i["corrected"] for i in fn["instructions"])
    assert fence["corrected"] >= 0.5 * fn["samples"]

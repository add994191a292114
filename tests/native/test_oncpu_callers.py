"""On-CPU recovered callers, live: perf's frame-pointer walk from a tick inside a library without frame
pointers skips the caller; the capture's on-CPU sampler (pmuprof-offcpu --sample-hz, BPF; root only)
recovers it with the library's CFI, and the report's reader puts it back into perf's samples by address.

progs/fp_spins_nofp.c spins inside progs/nofp_lib.c's nofp_spin (-fomit-frame-pointer, as glibc):
    thread a: fp_outer_a -> fp_spinner_a -> nofp_spin   (perf's walk: nofp_spin <- fp_outer_a)
    thread b: fp_outer_b -> fp_spinner_b -> nofp_spin
    thread c: fp_outer_c -> fp_spinner_a or _b through one pointer at one call site: the same walk for
              both callers, so nothing may be put back there (a guess would be wrong half the time).
    thread d: fp_outer_d -> fp_clobberer -> nofp_spin_clobber, which keeps data in the frame pointer (as glibc's send):
              perf's walk stops at the leaf; the thread's user sp keys the chain the sampler found.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from helpers import capture_under
from native_support import build_over_nofp_lib, native_binary
from pmuprof.model import rundir
from pmuprof.model.folded import load_folded
from test_offcpu_live import need_offcpu

SECONDS = 3
RECOVERED_AT_LEAST = 0.8  # of a thread's ticks in nofp_spin: a leaf address perf saw once the sampler may miss


@pytest.fixture(scope="module")
def spun(tmp_path_factory):
    need_offcpu()
    tmp = tmp_path_factory.mktemp("oncpu-callers")
    exe = build_over_nofp_lib("fp_spins_nofp", tmp)
    prog = subprocess.Popen([str(exe), "60"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = tmp / "run"

    def stop() -> None:
        prog.kill()
        prog.wait()

    try:  # the spinners end with the recording: the report does not share the CPUs with them
        res = capture_under(stop, out, "-p", str(prog.pid), "-d", str(SECONDS), "-F", "999", "--no-mysql", "-q")
    finally:
        stop()
    assert res.returncode == 0, res.stderr[-2000:]
    run = json.loads((out / rundir.RUN_JSON).read_text())
    if not run["offcpu"]["recorded"] and "not permitted" in run["offcpu"]["why_not"]:
        pytest.skip(f"BPF not allowed here: {run['offcpu']['why_not']}")
    stacks, _ = load_folded(out / rundir.STACKS)
    return out, run, stacks, prog.pid


def _under(stacks, outer: str, leaf: str = "nofp_spin") -> dict[str, int]:
    """Ticks in ``leaf`` of the thread running ``outer``, by the frames between the two."""
    got: dict[str, int] = {}
    for stack, n in stacks.items():
        frames = list(stack)
        if outer in frames and frames[-1] == leaf:
            between = frames[frames.index(outer) + 1 : -1]
            key = ";".join(between)
            got[key] = got.get(key, 0) + n
    return got


def _spliced(stacks) -> int:
    """Ticks with a spinner right above nofp_spin (a tick in a spinner itself has no nofp_spin frame)."""
    return sum(
        n
        for s, n in stacks.items()
        if any(a in ("fp_spinner_a", "fp_spinner_b") and b == "nofp_spin" for a, b in zip(s, s[1:]))
    )


def test_the_skipped_caller_is_put_back(spun):
    _, _, stacks, _ = spun
    for outer, spinner in (("fp_outer_a", "fp_spinner_a"), ("fp_outer_b", "fp_spinner_b")):
        got = _under(stacks, outer)
        total = sum(got.values())
        assert total > 50, f"{outer}: {total} ticks in nofp_spin: {got}"
        assert got.get(spinner, 0) >= RECOVERED_AT_LEAST * total, (outer, got)
        assert set(got) <= {spinner, ""}, (outer, got)  # recovered, or left as recorded: never another caller


GUESSED_AT_MOST = 0.25  # a leaf address whose >= 10 sampled stacks all went one way (2 * 0.5^10 a key) is ~1/8


WHOLE = ("start_thread", "run", "fp_outer_d", "fp_clobberer")  # thread d's chain below nofp_spin_clobber
SKIPPED = ("start_thread", "run", "fp_outer_d")  # a prologue tick's walk, as perf records it


def _stopped(stacks) -> dict[tuple[str, ...], int]:
    """Ticks in nofp_spin_clobber (with or without kernel frames above it) by the frames below it."""
    got: dict[tuple[str, ...], int] = {}
    for stack, n in stacks.items():
        if "nofp_spin_clobber" in stack:
            below = stack[1 : stack.index("nofp_spin_clobber")]
            got[below] = got.get(below, 0) + n
    return got


def test_a_walk_stopped_at_the_leaf_gets_its_whole_chain(spun):
    out, run, stacks, _ = spun
    assert "--user-regs=sp" in run["record"]["argv"], run["record"]["argv"]
    got = _stopped(stacks)
    total = sum(got.values())
    assert total > 50, got
    assert got.get(WHOLE, 0) >= RECOVERED_AT_LEAST * total, got
    # whole; or as recorded: the leaf alone, or (a tick in its prologue, before the frame pointer holds data) the walk
    # that skips fp_clobberer, whose few ticks the sampler may not have seen ten times
    assert set(got) <= {WHOLE, (), SKIPPED}, got


def test_a_call_site_reached_through_two_callers_gets_no_guess(spun):
    out, run, stacks, _ = spun
    got = _under(stacks, "fp_outer_c")
    total = sum(got.values())
    assert total > 20 and set(got) <= {"", "fp_spinner_a", "fp_spinner_b"}, got
    assert total - got.get("", 0) <= GUESSED_AT_MOST * total, got  # without the ambiguity check: every tick
    assert run["offcpu"]["callers_ambiguous"] > 0, run["offcpu"]


def test_run_files_say_what_was_recovered(spun):
    out, run, stacks, _ = spun
    oc = run["offcpu"]
    assert oc["sample_hz"] == 999 and oc["sampled_in_library"] > 0 and oc["callers_recovered"] > 0, oc
    assert oc["lost"]["samples_lost"] == 0, oc
    recovered = json.loads((out / rundir.ANALYSIS).read_text())["recovered_callers"]
    whole = _stopped(stacks).get(WHOLE, 0)  # (a prologue tick's walk recovered is that chain too)
    assert recovered == _spliced(stacks) + whole, recovered  # the program's only recovered callers
    lines = (out / rundir.RECOVERED_CALLERS).read_text().splitlines()
    assert lines[0] == "# pmuprof recovered callers 1" and len(lines) > 2


def test_without_the_table_the_walk_skips_the_caller(spun):
    out, _, _, pid = spun
    plain = subprocess.run(
        [str(native_binary("pmuprof-perfdata")), "--pid", str(pid), str(out / rundir.PERF_DATA)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    stacks = {tuple(line.rpartition(" ")[0].split(";")): int(line.rpartition(" ")[2]) for line in plain.splitlines()}
    assert _under(stacks, "fp_outer_a") and _spliced(stacks) == 0
    # the walk stopped at the leaf: nothing above it (a prologue tick's walk skips fp_clobberer)
    assert set(_stopped(stacks)) <= {(), SKIPPED} and _stopped(stacks).get((), 0) > 50, _stopped(stacks)

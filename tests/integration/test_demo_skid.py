"""Issue 3's acceptance on the live demo: ut_delay's PAUSE and os_rmb's mfence, raw vs skid-corrected."""

from __future__ import annotations

import json

import pytest

from helpers import demo_cli, need_perf, run_cli


def _annotate(run_dir, symbol: str) -> dict:
    res = run_cli("annotate", str(run_dir), "--symbol", symbol, "--json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


@pytest.mark.parametrize(
    "scenario,symbol,culprit", [("spin", "ut_delay", "pause"), ("page-cleaner", "os_rmb", "mfence")]
)
def test_samples_move_from_after_the_stall_onto_it(tmp_path, scenario, symbol, culprit):
    need_perf()
    out = tmp_path / scenario
    res = demo_cli(out, "--scenario", scenario, "-d", "3", "-q")
    assert res.returncode == 0, res.stderr
    data = _annotate(out, symbol)
    insns, total = data["instructions"], sum(i["raw"] for i in data["instructions"])
    if total < 100:
        pytest.skip(f"only {total} samples of {symbol}: the machine is too busy for a stable share")
    assert total == sum(i["corrected"] for i in insns), "samples move, none vanish"
    at = next(n for n, i in enumerate(insns) if i["text"].startswith(culprit))
    after = sum(i["raw"] for i in insns[at + 1 : at + 3])  # the next instruction, or two past a NOP / one-cycle op
    assert insns[at]["raw"] < 0.1 * total, "perf charges the stall to what follows"
    # what the code decides: every sample of the two instructions after the stall moves onto it
    assert insns[at]["corrected"] == insns[at]["raw"] + after, insns[at : at + 3]
    # the share it gets: >= 0.9 on a quiet host; a loaded VM's cpu-clock skids farther (os_rmb's ret
    # held 24 % of its samples under load 5-8, three instructions past the mfence: left in place)
    assert insns[at]["corrected"] >= 0.6 * total, insns

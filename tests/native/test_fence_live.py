"""Live: every x86 full-fence form under perf, skid-corrected onto the fence, and the fence rules' decisions.

progs/fence_forms_live.c runs GCC's __sync_synchronize() (lock or $0,(%rsp)) in buf_get_n_pending_read_ios,
an mfence in rw_lock_x_lock_func and a seq_cst store (xchg) in l_find. The first two are places where
InnoDB issues os_rmb / os_wmb, so memory-barrier-full-fence must blame them; l_find is MariaDB's
lf_hash pin store, which only the neutral hot-fence rule may name, with no rebuild advice.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from helpers import cli, need_perf
from native_support import PROGS, compile_prog, need_features, helper_binary

COMM = "fence_forms"
# function -> (decoded kind, how its instruction starts): what GCC 12 -O2 emits for the source
FORMS = {
    "buf_get_n_pending_read_ios": ("lock-fence", "lock or"),
    "rw_lock_x_lock_func": ("fence", "mfence"),
    "l_find": ("xchg-store", "xchg"),
}
MIN_SAMPLES = 40  # per function; cpu-clock samples only while on CPU, a saturated host starves the program


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    perf = need_perf()
    need_features(helper_binary(), "elfutils", "capstone")
    tmp = tmp_path_factory.mktemp("fences")
    exe = compile_prog(PROGS / "fence_forms_live.c", tmp / COMM, "gcc", "-O2", ("-fno-omit-frame-pointer",))
    data = tmp / "perf.data"
    rec = subprocess.run(
        [perf, "record", "-q", "-g", "-e", "cpu-clock", "-F", "999", "-o", str(data), "--", str(exe), "1.5"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if rec.returncode != 0:
        pytest.skip(f"perf record failed here: {rec.stderr.strip()[-200:]}")
    res = cli("report", str(data), "--comm", COMM, "--json")
    assert res.returncode == 0, res.stderr
    findings = {f["rule"]: f for f in json.loads(res.stdout)["findings"]}
    return data, findings


def _annotate(data, symbol: str) -> dict:
    res = cli("annotate", str(data), "--comm", COMM, "--symbol", symbol, "--json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


@pytest.mark.parametrize("symbol", sorted(FORMS))
def test_samples_after_each_fence_form_move_onto_it(recorded, symbol):
    data, _ = recorded
    listing = _annotate(data, symbol)
    if listing["samples"] < MIN_SAMPLES:
        pytest.skip(f"only {listing['samples']} samples of {symbol}: host too busy to judge")
    insns = listing["instructions"]
    kind, text = FORMS[symbol]
    at = next((n for n, i in enumerate(insns) if i["kind"] == kind), None)
    if at is None:
        pytest.skip(f"this compiler emitted no {kind} in {symbol}: {[i['text'] for i in insns]}")
    fence, after = insns[at], insns[at + 1]
    assert fence["text"].startswith(text), fence
    # perf charges the fence's stall to the next instruction (and, past a one-cycle register op, the one
    # after); correction moves exactly the samples it takes off them back onto the fence
    moved = [i for i in insns[at + 1 : at + 3] if i["raw"] and not i["corrected"]]
    assert after in moved and fence["corrected"] == fence["raw"] + sum(i["raw"] for i in moved), insns[at : at + 3]
    assert after["raw"] >= 3 * max(fence["raw"], 1), insns[at : at + 2]


def test_barrier_rule_blames_only_the_innodb_barrier_contexts(recorded):
    _, findings = recorded
    blamed = findings.get("memory-barrier-full-fence")
    assert blamed, sorted(findings)
    sites = {s["function"]: s for s in blamed["evidence"]["fence"]["functions"]}
    assert set(sites) == {"buf_get_n_pending_read_ios", "rw_lock_x_lock_func"}, sites
    assert any(f.startswith("lock or") for f in sites["buf_get_n_pending_read_ios"]["forms"]), sites
    assert sites["rw_lock_x_lock_func"]["forms"] == ["mfence"], sites
    assert "l_find" not in blamed["message"] and any("rebuild" in step["text"] for step in blamed["fix"])


def test_other_fences_are_named_neutrally(recorded):
    _, findings = recorded
    neutral = findings.get("hot-fence")
    assert neutral and neutral["severity"] == "info", sorted(findings)
    assert [s["function"] for s in neutral["evidence"]["fence"]["functions"]] == ["l_find"]
    assert neutral["evidence"]["fence"]["functions"][0]["forms"] == ["xchg (a seq_cst store)"]
    assert "l_find" in neutral["message"] and not neutral["fix"]
    assert not any(word in neutral["message"].lower() for word in ("rebuild", "vendor", "os_rmb is"))

"""pmuprof-helper pmu/encode: libpfm4 names -> perf syntax, checked against pmu-facts section 4 under LIBPFM_FORCE_PMU."""

from __future__ import annotations

import pytest

from native_support import helper_binary, need_features, run_helper

# (forced PMU, libpfm4 name, perf spelling) transcribed from pmu-facts.md section 4 (libpfm4 4.13, checked there).
CASES = [
    ("skl", "ROB_MISC_EVENTS:PAUSE_INST", "r40cc"),
    ("skl", "UNHALTED_CORE_CYCLES", "r3c"),
    ("skl", "INST_RETIRED:PREC_DIST:precise=3", "r1c0:ppp"),
    ("skl", "CYCLE_ACTIVITY:STALLS_TOTAL", "r40004a3"),
    ("skl", "MEM_LOAD_L3_HIT_RETIRED:XSNP_HITM:precise=2", "r4d2:pp"),
    ("skl", "OFFCORE_RESPONSE_0:DMND_RFO:L3_HIT:SNP_HITM", "cpu/config=0x1b7,config1=0x10001c0002/"),
    ("clx", "ROB_MISC_EVENTS:PAUSE_INST", "r40cc"),
    ("clx", "MEM_LOAD_L3_MISS_RETIRED:REMOTE_DRAM", "r2d3"),
    ("clx", "MEM_TRANS_RETIRED:LOAD_LATENCY:ldlat=64:precise=2", "cpu/config=0x1cd,config1=0x40/pp"),
    ("clx", "MEM_INST_RETIRED:LOCK_LOADS", "r21d0"),
    ("icx", "MISC_RETIRED:PAUSE_INST", "r40cc"),
    ("icx", "INST_RETIRED:PREC_DIST:precise=3", "r100:ppp"),
    ("icx", "OCR:DEMAND_RFO_L3_HIT_SNOOP_HITM", "cpu/config=0x1b7,config1=0x10003c0002/"),
    ("icx", "TOPDOWN:BACKEND_BOUND_SLOTS", "r200"),
    ("icx", "MACHINE_CLEARS:COUNT", "r10401c3"),
    ("spr", "CPU_CLK_UNHALTED:PAUSE", "r40ec"),
    ("spr", "CPU_CLK_UNHALTED:PAUSE_INST", "r10440ec"),
    ("spr", "MEM_LOAD_L3_HIT_RETIRED:XSNP_FWD", "r4d2"),
    ("spr", "OCR:DEMAND_RFO_L3_HIT_SNOOP_HITM", "cpu/config=0x12a,config1=0x10003c0002/"),
    ("spr", "MEMORY_ACTIVITY:STALLS_L3_MISS", "r9000947"),
    ("spr", "TOPDOWN:BAD_SPEC_SLOTS", "r400"),  # the 4.13 bug pmu-facts records
    ("amd64_fam19h_zen4", "CYCLES_NOT_IN_HALT", "r76"),
    ("amd64_fam19h_zen4", "DISPATCH_STALLS_1:BE_STALLS", "r100001ea0"),
    ("amd64_fam19h_zen4", "ANY_DATA_CACHE_FILLS_FROM_SYSTEM:DRAM_IO_FAR", "r4044"),
    ("amd64_fam19h_zen4", "RETIRED_LOCK_INSTRUCTIONS:BUS_LOCK", "r125"),
]

# Names a model does not have (pmu-facts: "—" cells and the rejected precise forms).
MISSING = [
    ("skl", "MISC_RETIRED:PAUSE_INST"),
    ("spr", "MISC_RETIRED:PAUSE_INST:precise=2"),
    ("amd64_fam19h_zen4", "CYCLES_NOT_IN_HALT:precise=1"),
    ("amd64_fam19h_zen4", "ROB_MISC_EVENTS:PAUSE_INST"),
]


@pytest.fixture(scope="module")
def helper():
    path = helper_binary()
    need_features(path, "libpfm4")
    return path


@pytest.mark.parametrize("pmu,name,perf", CASES)
def test_encoding_matches_pmu_facts(helper, pmu, name, perf):
    rc, data = run_helper(helper, "encode", name, env={"LIBPFM_FORCE_PMU": pmu})
    assert rc == 0, data
    event = data["events"][0]
    assert event["perf"] == perf, event
    assert event["config"].startswith("0x") and event["type"] == 4


@pytest.mark.parametrize("pmu,name", MISSING)
def test_unknown_names_fail_per_event(helper, pmu, name):
    rc, data = run_helper(
        helper,
        "encode",
        name,
        "INST_RETIRED:ANY_P" if pmu != "amd64_fam19h_zen4" else "RETIRED_INSTRUCTIONS",
        env={"LIBPFM_FORCE_PMU": pmu},
    )
    assert rc == 0, "one good name keeps the exit status 0"
    bad, good = data["events"]
    assert bad["error"] and "perf" not in bad
    assert good["perf"] == "rc0"
    assert data["failed"] == 1 and data["encoded"] == 1


def test_all_names_failing_exits_non_zero(helper):
    rc, data = run_helper(helper, "encode", "NO_SUCH_EVENT", "ALSO:NOT_THERE", env={"LIBPFM_FORCE_PMU": "skl"})
    assert rc != 0 and data["failed"] == 2


def test_pmu_reports_forced_model_and_hardware_probe(helper):
    rc, data = run_helper(helper, "pmu", env={"LIBPFM_FORCE_PMU": "icx"})
    assert rc == 0
    assert data["libpfm"]["force_pmu"] == "icx" and data["core_pmu"] == "icx"
    assert data["libpfm"]["version"]
    hw = data["hardware_counters"]
    assert isinstance(hw["cycles_open"], bool)
    assert hw["cycles_open"] or hw["error"]


def test_python_wrapper_encode(helper, monkeypatch):
    from pmuprof.tools.native import helper as pyhelper

    monkeypatch.setenv("PMUPROF_HELPER", str(helper))
    monkeypatch.setenv("LIBPFM_FORCE_PMU", "clx")
    out = pyhelper.encode(["ROB_MISC_EVENTS:PAUSE_INST", "NOPE"])
    assert out[0]["perf"] == "r40cc" and out[1]["error"]
    assert pyhelper.pmu_info()["core_pmu"] == "clx"

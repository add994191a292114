"""Every curated per-CPU event encodes under libpfm4 for its CPU model, to the pmu-facts §4 values."""

import pytest

from pmuprof.capture import events

EXPECTED = {  # label -> perf raw spelling (pmu-facts §4.2)
    "skx": {"pause_inst": "r40cc", "hitm_local": "r4d2", "remote_dram": "r2d3", "stalls_total": "r40004a3"},
    "clx": {"pause_inst": "r40cc", "hitm_remote": "r4d3", "local_dram": "r1d3"},
    "icx": {"pause_inst": "r40cc", "remote_dram": "r2d3", "lock_loads": "r21d0"},
    "spr": {"pause_cycles": "r40ec", "pause_inst": "r10440ec", "hitm_local": "r4d2"},
    "bdx": {"hitm_remote": "r10d3", "remote_dram": "r4d3"},
    "zen4": {"remote_dram": "r4044", "local_dram": "r844", "lock_loads": "r125"},
}


@pytest.fixture
def helper_encode():
    from pmuprof.tools.native import helper
    from pmuprof.errors import HelperError

    try:
        if not helper.features().get("libpfm4"):
            pytest.skip("pmuprof-helper built without libpfm4 (apt-get install libpfm4-dev)")
    except HelperError as err:
        pytest.skip(f"native helper not built: {err}")
    return helper.encode


@pytest.mark.parametrize("microarch", sorted(EXPECTED))
def test_event_set_encodes_completely(microarch, helper_encode, monkeypatch):
    monkeypatch.setenv("LIBPFM_FORCE_PMU", events.PFM_MODELS[microarch])
    encoded, notes = events.encode_set(microarch, helper_encode)
    assert notes == []
    got = dict(encoded)
    assert len(got) == len(events.default_events(microarch))
    for label, perf in EXPECTED[microarch].items():
        assert got[label] == perf


def test_unknown_microarch_says_what_is_missing():
    encoded, notes = events.encode_set("unknown", lambda names: [])
    assert encoded == [] and "no curated PMU event set" in notes[0]

"""buffer-pool-too-small: the pool-size arithmetic (findings/bufpool.py) and its text with facts missing."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pmuprof.findings.bufpool import pool_fit
from pmuprof.findings.engine import evaluate
from pmuprof.findings.facts import facts_for

from helpers import make_profile

from .conftest import FIXTURES, load_fixture

MIB = 1 << 20


def _fit(variables: dict, data: int | None, reads: int = 3000, requests: int = 10000):
    mysql = {
        "reachable": True,
        "server": {"family": "mysql", "version": "8.0.39", "version_tuple": [8, 0, 39]},
        "variables": variables,
        "status": {
            "interval_s": 2.0,
            "before": {
                "Innodb_buffer_pool_reads": "0",
                "Innodb_buffer_pool_read_requests": "0",
                "Innodb_buffer_pool_wait_free": "7",
            },
            "after": {
                "Innodb_buffer_pool_reads": str(reads),
                "Innodb_buffer_pool_read_requests": str(requests),
                "Innodb_buffer_pool_wait_free": "7",
                "Innodb_buffer_pool_pages_total": "8192",
            },
            "rates": {"Innodb_buffer_pool_reads": reads / 2, "Innodb_buffer_pool_read_requests": requests / 2},
        },
        "innodb_data": {"source": "t", "tablespaces": 3, "bytes": data} if data is not None else None,
    }
    profile = make_profile({("mysqld", "main"): 1}, mysql=mysql)
    missing: list[str] = []
    return pool_fit(facts_for(profile, "mysqld"), None, missing), missing


@pytest.mark.parametrize(
    "pool, chunk, instances, data, want",
    [
        (128 * MIB, 128 * MIB, 1, 1000 * MIB, 1152 * MIB),  # 1000 MiB + a tenth = 1100, up to 9 chunks of 128
        (1024 * MIB, 128 * MIB, 8, 3000 * MIB, 4096 * MIB),  # 3300 MiB in units of 8 x 128 MiB
        (128 * MIB, 128 * MIB, 1, None, 256 * MIB),  # data unknown: twice the pool
        (512 * MIB, 128 * MIB, 1, 400 * MIB, None),  # the pool holds all the data: no size to propose
    ],
)
def test_the_next_size(pool, chunk, instances, data, want) -> None:
    fit, missing = _fit(
        {
            "innodb_buffer_pool_size": str(pool),
            "innodb_buffer_pool_chunk_size": str(chunk),
            "innodb_buffer_pool_instances": str(instances),
        },
        data,
    )
    assert fit.suggested_bytes == want, fit.basis
    assert fit.data_fits is (None if data is None else want is None)
    assert ("InnoDB data size not captured" in " ".join(missing)) is (data is None)


def test_rates_and_turnover() -> None:
    fit, _ = _fit({"innodb_buffer_pool_size": str(128 * MIB)}, None)
    assert fit.miss_ratio == pytest.approx(0.3) and fit.reads_per_s == 1500
    assert fit.wait_free_per_s == 0.0  # a counter that did not grow is 0 per second, not its total
    assert fit.turnover_s == pytest.approx(8192 / 1500)
    assert fit.read_mib_s == pytest.approx(1500 * 16384 / MIB)


@pytest.mark.parametrize("drop", ["server", "offcpu", "both"])
def test_no_placeholder_when_facts_are_missing(drop) -> None:
    profile, _ = load_fixture(FIXTURES / "buffer-pool-too-small" / "fire-point-select-8m.folded")
    gone = {"server": {"server": None}, "offcpu": {"offcpu": None}, "both": {"server": None, "offcpu": None}}[drop]
    found = next(f for f in evaluate(replace(profile, **gone)) if f.rule == "buffer-pool-too-small")
    text = found.message + "\n" + found.fix_text()
    assert "n/a" not in text and "None" not in text and "{" not in text, text
    assert found.fix  # the general advice stays when no size can be computed

"""The pid parameter types: perf's comma list, pidof's extra words, order kept and each pid once."""

from __future__ import annotations

import pytest

from pmuprof.cli.params import ExtraPids, Pids, flat_pids
from pmuprof.errors import UsageError


def test_comma_list_and_single() -> None:
    assert Pids().convert("12,34", None, None) == (12, 34)
    assert Pids().convert("12", None, None) == (12,)
    assert Pids().convert("12,", None, None) == (12,)


@pytest.mark.parametrize("bad", ["", ",", "12,x", "0", "-3", "1e3", "s3cr3t", "12,,s3cr3t", "٣"])
def test_bad_tokens_are_refused_without_echo(bad: str) -> None:
    for kind in (Pids(), ExtraPids()):
        with pytest.raises(UsageError) as err:
            kind.convert(bad, None, None)
        if any(c.isalpha() for c in bad):
            assert bad not in str(err.value) and "s3cr3t" not in str(err.value)
        assert "--all-mysqld" in str(err.value)


def test_flat_pids_keeps_order_and_drops_repeats() -> None:
    assert flat_pids(((3, 1), 2), (1, (4,)), [5, 3]) == (3, 1, 2, 4, 5)

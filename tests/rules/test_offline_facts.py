"""Offline (no server facts): the version comes from the binary, what needs a variable is given at the
default and said so, and only the detected version's fixes are printed."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pmuprof.findings.engine import evaluate
from pmuprof.model.analysis import Binary, Process

from .conftest import FIXTURES, load_fixture

SRW = FIXTURES / "innodb-spin-wait" / "fire-mariadb-srw.folded"  # MariaDB 10.6+ spin frames
EXE = "/opt/mariadb/bin/mariadbd"


def _spin(version: str | None, facts: dict | None = None, rules=None):
    profile, _ = load_fixture(SRW, facts if facts is not None else {})
    binary = Binary(EXE, file=EXE, server_version=version or "")
    profile = replace(
        profile,
        analysis=replace(
            profile.analysis, binaries=(binary,), processes=(Process("mariadbd", 7, "mariadbd", EXE, profile.total),)
        ),
    )
    return next(f for f in evaluate(profile, rules) if f.rule == "innodb-spin-wait")


def test_offline_11_4_is_read_from_the_binary_and_the_delay_is_said_unknown(rules) -> None:
    f = _spin("11.4.5-MariaDB", rules=rules)
    assert f.server == "MariaDB 11.4.5-MariaDB"
    cost = f.evidence["cost"]
    assert (cost.delay_known, cost.round_name, cost.delay) == (False, "srw_pause", 4.0)
    assert "at the default innodb_spin_wait_delay 4 (the server's value is not known" in f.message
    assert "ut_delay" not in f.message  # 10.6+ has no ut_delay: one round is srw_pause
    sql = "\n".join(s.text for s in f.fix if s.kind == "sql")
    assert "SHOW GLOBAL VARIABLES LIKE 'innodb_spin_wait_delay'" in sql
    assert "SET GLOBAL innodb_spin_wait_delay = 4" in sql
    # the detected version's fixes only
    for other in ("MySQL", "before 10.3.17", "before 10.5.5", "Percona"):
        assert other not in f.fix_text(), f.fix_text()
    assert {s.applies_to for s in f.fix} == {"", "MariaDB 10.4.7+", "MariaDB 10.5.5+"}
    assert "thread_handling = pool-of-threads; innodb_thread_concurrency is ignored from 10.5.5" in f.fix_text()


@pytest.mark.parametrize("version,name", [("10.2.11-MariaDB", "one maximal ut_delay"), ("", "ut_delay / srw_pause")])
def test_older_or_unknown_versions_name_their_delay(rules, version: str, name: str) -> None:
    f = _spin(version, rules=rules)
    assert name in f.message
    if not version:  # unknown version: every variant, each with its label
        assert {"MariaDB before 10.3.17 / 10.4.7", "MariaDB 10.5.5+"} <= {s.applies_to for s in f.fix}


def test_with_the_server_asked_the_delay_is_a_fact(rules) -> None:
    mysql = {
        "reachable": True,
        "server": {"family": "mariadb", "version": "11.4.5-MariaDB", "version_tuple": [11, 4, 5]},
        "variables": {"innodb_spin_wait_delay": "200", "innodb_sync_spin_loops": "30"},
    }
    f = _spin("11.4.5-MariaDB", {"mysql": mysql}, rules)
    assert f.evidence["cost"].delay_known and f.evidence["cost"].delay_raised
    assert "one spin round's srw_pause = 200 ×" in f.message and "not known" not in f.message
    assert f.fix[0].kind == "sql" and f.fix[0].text.startswith("SET GLOBAL innodb_spin_wait_delay = 4;")
    assert "SHOW GLOBAL VARIABLES" not in f.fix_text()

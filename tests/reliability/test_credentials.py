"""Issue 26, credentials: a password typed where a variable name or a pid belongs is refused without being
printed back, and run.json's command and the report never hold what was given to a password option."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import finish, one_line, spawn_cli

SECRET = "Hunter2Sup3rSecret"  # looks like a variable name: only "is it set?" can tell


def _nowhere(res, folder: Path) -> None:
    """The secret is in neither output stream nor any file written under ``folder``."""
    assert SECRET not in res.out and SECRET not in res.err, res.err
    for path in folder.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


@pytest.mark.parametrize("value", [SECRET, f"{SECRET}!", f"p@ss {SECRET}"])
def test_password_given_as_password_env_is_refused_unechoed(pmuprof, busy, tmp_path, monkeypatch, value):
    monkeypatch.delenv(SECRET, raising=False)
    res = pmuprof(
        "capture",
        "-p",
        busy.pid,
        "-d",
        "1",
        "--mysql-socket",
        tmp_path / "no.sock",
        "--mysql-password-env",
        value,
        "-o",
        tmp_path / "out",
    )
    one_line(res, 2, "--mysql-password-env")
    _nowhere(res, tmp_path)


def test_password_given_to_p_is_refused_unechoed(pmuprof, tmp_path):
    res = pmuprof("capture", f"-p{SECRET}", "-d", "1", "-o", tmp_path / "out")
    one_line(res, 2, "-p")
    _nowhere(res, tmp_path)


def test_password_env_name_is_not_written_and_old_commands_are_redacted_in_the_report(pmuprof, busy, tmp_path):
    out = tmp_path / "out"  # a real process: run.json's command is its argv
    res = finish(
        spawn_cli(
            "capture",
            "-p",
            busy.pid,
            "-d",
            "1",
            "--mysql-socket",
            tmp_path / "no.sock",
            "--mysql-password-env",
            SECRET,
            "-o",
            out,
            env={SECRET: "the-password"},
        ),
        timeout=180,
    )
    assert res.code == 0, res.err
    command = json.loads((out / "run.json").read_text())["command"]
    assert "--mysql-password-env" in command and (out / "report.html").is_file()
    _nowhere(res, tmp_path)
    # a run directory written before redaction (or by hand): the report still does not show it
    old = tmp_path / "old"
    old.mkdir()
    (old / "run.json").write_text(
        json.dumps(
            {
                "pmuprof_version": "0.2.0",
                "schema": 2,
                "duration_s": 5.0,
                "command": ["pmuprof", "capture", "--mysql-password-env", SECRET, f"--password={SECRET}"],
            }
        )
    )
    (old / "stacks.folded").write_text("mysqld;do_command;ut_delay 70\nmysqld;do_command;row_search_mvcc 30\n")
    res = pmuprof("report", old, "-o", tmp_path / "report")
    assert res.code == 0, res.err
    assert (tmp_path / "report" / "report.html").is_file()
    for name in ("report.html", "findings.json", "report.md"):
        assert SECRET not in (tmp_path / "report" / name).read_text(), name
    assert SECRET not in res.out and SECRET not in res.err

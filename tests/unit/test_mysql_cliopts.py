"""The shared --mysql-* options: parsed into MysqlOptions, no password option, --no-mysql."""

from __future__ import annotations

import click
from click.testing import CliRunner

from pmuprof.capture.mysql.facts import MysqlOptions
from pmuprof.cli.mysqlopts import mysql_options, pop_mysql_options


def make_command(seen: list) -> click.Command:
    @click.command()
    @mysql_options
    @click.option("--other", default="x")
    def cmd(**kwargs) -> None:
        seen.append((pop_mysql_options(kwargs), kwargs))

    return cmd


def test_options_become_mysql_options() -> None:
    seen: list = []
    result = CliRunner().invoke(
        make_command(seen),
        [
            "--mysql-host",
            "db1",
            "--mysql-port",
            "3307",
            "--mysql-user",
            "prof",
            "--mysql-password-env",
            "PW",
            "--defaults-file",
            "x.cnf",
        ],
        env={"PW": "secret"},
    )  # the variable must be set: an unset name may be a password
    assert result.exit_code == 0, result.output
    opts, rest = seen[0]
    assert opts == MysqlOptions(host="db1", port=3307, user="prof", password_env="PW", defaults_file="x.cnf")
    assert rest == {"other": "x"}


def test_no_mysql_and_defaults() -> None:
    seen: list = []
    assert CliRunner().invoke(make_command(seen), ["--no-mysql", "--mysql-socket", "/s"]).exit_code == 0
    assert CliRunner().invoke(make_command(seen), []).exit_code == 0
    assert seen[0][0] is None
    assert seen[1][0] == MysqlOptions()


def test_no_password_option_exists() -> None:
    result = CliRunner().invoke(make_command([]), ["--mysql-password", "hunter2"])
    assert result.exit_code != 0
    assert "--mysql-password-env" in CliRunner().invoke(make_command([]), ["--help"]).output

"""Option files resolved by my_print_defaults (the server's own reading), the parser as fallback; --ssl-* to PyMySQL."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from pmuprof.capture.mysql import mydefaults
from pmuprof.capture.mysql.facts import MysqlOptions, collect_facts
from pmuprof.capture.mysql.mydefaults import (
    OptionFileError,
    OptionSources,
    parse_print_defaults,
    print_defaults_argv,
    resolve,
)
from pmuprof.capture.mysql.optionfiles import CLIENT_GROUPS
from pmuprof.capture.mysql.tls import Tls, must_be_encrypted, pymysql_kwargs, tls_from
from pmuprof.cli.mysqlopts import mysql_options, pop_mysql_options

REAL = shutil.which("my_print_defaults")


def test_argv_puts_the_file_options_first():
    src = OptionSources(defaults_file="/a.cnf", group_suffix="_prod", login_path="ro")
    assert print_defaults_argv("mpd", src, ("client", "mysql"), show=True) == [
        "mpd",
        "--defaults-file=/a.cnf",
        "--defaults-group-suffix=_prod",
        "--login-path=ro",
        "--show",
        "client",
        "mysql",
    ]
    assert print_defaults_argv("mpd", OptionSources(extra_file="/x.cnf"), ("client",), False) == [
        "mpd",
        "--defaults-extra-file=/x.cnf",
        "client",
    ]
    assert print_defaults_argv("mpd", OptionSources(no_defaults=True, defaults_file="/a"), ("client",), False) == [
        "mpd",
        "--no-defaults",
    ]


def test_parse_output_later_wins_and_keys_normalised():
    text = "--user=bob\n--ssl-ca=/etc/ca.pem\n--loose-ssl-mode=REQUIRED\n--skip-ssl\n--user=alice\n--password=a=b\n"
    assert parse_print_defaults(text) == {
        "user": "alice",
        "ssl_ca": "/etc/ca.pem",
        "ssl_mode": "REQUIRED",
        "skip_ssl": None,
        "password": "a=b",
    }


def _fake_mysql_tool(tmp_path: Path) -> Path:
    """A my_print_defaults that speaks like MySQL 8's: --login-path and --show exist; prints its argv back."""
    tool = tmp_path / "my_print_defaults"
    tool.write_text(
        '#!/bin/sh\nif [ "$1" = --help ]; then echo "  --login-path=#  --show"; exit 0; fi\n'
        'printf -- "--user=%s\\n" "$(echo "$@" | tr " " "+")"\necho --password=secret\n'
    )
    tool.chmod(0o755)
    return tool


def test_mysql_flavour_reads_a_login_path_and_shows_passwords(tmp_path):
    tool = _fake_mysql_tool(tmp_path)
    opts, how = resolve(OptionSources(login_path="prod"), ("client",), tool=str(tool))
    assert how == str(tool)
    assert opts["user"] == "--login-path=prod+--show+client" and opts["password"] == "secret"


@pytest.mark.skipif(REAL is None, reason="my_print_defaults not installed (apt-get install mariadb-client-core)")
def test_real_tool_resolves_suffix_extra_file_and_includes(tmp_path):
    inc = tmp_path / "inc.cnf"
    inc.write_text("[client_prod]\nsocket=/run/prod.sock\n")
    cnf = tmp_path / "a.cnf"
    cnf.write_text(f"[client]\nuser=bob\npassword=s3cr#et\nport=3306\n[client_prod]\nport=3307\n!include {inc}\n")
    opts, how = resolve(OptionSources(defaults_file=str(cnf), group_suffix="_prod"), CLIENT_GROUPS, tool=REAL)
    assert how == REAL
    assert opts["user"] == "bob" and opts["port"] == "3307" and opts["socket"] == "/run/prod.sock"
    assert opts["password"] == "s3cr"  # '#' starts a comment for the server's tools ...
    fallback, how = resolve(OptionSources(defaults_file=str(cnf), group_suffix="_prod"), CLIENT_GROUPS, tool="")
    assert "parser" in how and fallback == opts  # ... and for the fallback parser: both read alike
    with pytest.raises(OptionFileError, match="refused"):
        resolve(OptionSources(defaults_file=str(tmp_path / "absent.cnf")), CLIENT_GROUPS, tool=REAL)


@pytest.mark.skipif(REAL is None, reason="my_print_defaults not installed (apt-get install mariadb-client-core)")
def test_mariadb_tool_cannot_read_login_paths_and_says_what_to_do():
    if "--login-path" in mydefaults._capabilities(REAL):
        pytest.skip("this my_print_defaults is MySQL's: it reads login paths")
    with pytest.raises(OptionFileError, match="mylogin.cnf.*--defaults-extra-file"):
        resolve(OptionSources(login_path="prod"), CLIENT_GROUPS, tool=REAL)


def test_extra_file_and_no_defaults_with_the_fallback_parser(tmp_path, monkeypatch):
    monkeypatch.setenv("PMUPROF_MY_PRINT_DEFAULTS", "")
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".my.cnf").write_text("[client]\nuser=fromhome\n")
    extra = tmp_path / "extra.cnf"
    extra.write_text("[client]\nuser=fromextra\nport=3310\n")
    opts, how = resolve(OptionSources(extra_file=str(extra)))
    assert "parser" in how and opts["user"] == "fromhome" and opts["port"] == "3310"  # ~/.my.cnf is read last
    assert resolve(OptionSources(no_defaults=True))[0] == {}


def test_unreadable_option_files_make_the_server_unreachable_not_a_crash(tmp_path):
    if REAL is None:
        pytest.skip("my_print_defaults not installed")
    facts = collect_facts(MysqlOptions(defaults_file=str(tmp_path / "absent.cnf")))
    assert facts["reachable"] is False and "absent.cnf" in facts["error"]


@pytest.mark.parametrize(
    "cli, files, mode",
    [
        (Tls(), {}, None),
        (Tls(), {"ssl_ca": "/ca.pem"}, "VERIFY_CA"),  # MySQL: --ssl-ca alone means VERIFY_CA
        (Tls(), {"ssl_cert": "/c.pem", "ssl_key": "/k.pem"}, "PREFERRED"),
        (Tls(), {"ssl": None}, "REQUIRED"),  # MariaDB's --ssl
        (Tls(), {"skip_ssl": None}, "DISABLED"),
        (Tls(), {"ssl_verify_server_cert": None, "ssl_ca": "/ca.pem"}, "VERIFY_IDENTITY"),
        (Tls(), {"ssl_mode": "required"}, "REQUIRED"),
        (Tls("DISABLED"), {"ssl_mode": "REQUIRED"}, "DISABLED"),  # the command line wins
    ],
)
def test_tls_mode_from_command_line_and_option_files(cli, files, mode):
    assert tls_from(cli, files).mode == mode


def test_pymysql_arguments_by_mode():
    assert pymysql_kwargs(Tls()) == {}
    assert pymysql_kwargs(Tls(), over_socket=True) == {"ssl_disabled": True}  # as MySQL's clients: no TLS on a socket
    assert pymysql_kwargs(Tls("PREFERRED"), over_socket=True)["ssl_verify_cert"] is False  # asked for: negotiated
    assert pymysql_kwargs(Tls("DISABLED")) == {"ssl_disabled": True}
    assert pymysql_kwargs(Tls("REQUIRED", cert="/c", key="/k")) == {
        "ssl_verify_cert": False,
        "ssl_verify_identity": False,
        "ssl_cert": "/c",
        "ssl_key": "/k",
    }
    assert pymysql_kwargs(Tls("VERIFY_IDENTITY", ca="/ca")) == {
        "ssl_verify_cert": True,
        "ssl_verify_identity": True,
        "ssl_ca": "/ca",
    }
    with pytest.raises(ValueError, match="needs --ssl-ca"):
        pymysql_kwargs(Tls("VERIFY_CA"))
    assert must_be_encrypted(Tls("REQUIRED")) and not must_be_encrypted(Tls("PREFERRED"))
    with pytest.raises(ValueError):
        Tls("SOMETIMES")


def test_cli_options_reach_mysql_options():
    seen = []

    @mysql_options
    def cmd(**kwargs):
        seen.append(pop_mysql_options(kwargs))

    import click

    command = click.command()(cmd)
    result = CliRunner().invoke(
        command,
        [
            "-h",
            "db1",
            "-P",
            "3307",
            "-u",
            "u",
            "-S",
            "/s.sock",
            "--ssl-mode",
            "verify_identity",
            "--ssl-ca",
            "/ca",
            "--defaults-extra-file",
            "/x.cnf",
            "--defaults-group-suffix",
            "_prod",
            "--login-path",
            "ro",
            "--no-defaults",
        ],
    )
    assert result.exit_code == 0, result.output
    assert seen[0] == MysqlOptions(
        socket="/s.sock",
        host="db1",
        port=3307,
        user="u",
        defaults_extra_file="/x.cnf",
        defaults_group_suffix="_prod",
        login_path="ro",
        no_defaults=True,
        tls=Tls("VERIFY_IDENTITY", "/ca"),
    )


def test_tls_required_against_a_server_without_tls_is_refused_not_downgraded(tmp_path):
    """A closed port fails before TLS; VERIFY_CA without a CA fails before connecting at all."""
    facts = collect_facts(MysqlOptions(host="127.0.0.1", port=1, tls=Tls("VERIFY_CA"), connect_timeout=1))
    assert facts["reachable"] is False and "needs --ssl-ca" in facts["error"]

"""Option files are read like the mysql client: groups, quoting, includes, later wins."""

from __future__ import annotations

from pathlib import Path

from pmuprof.capture.mysql.optionfiles import client_options, parse_option_text


def test_parse_groups_quotes_escapes_and_comments() -> None:
    text = """
# comment
; other comment
[client]
user = app
password = "p#ss w=rd"
socket=/run/mysql.sock   # trailing comment
prompt=a\\sb\\\\c
loose-ssl-mode=DISABLED
skip-ssl
[mysqld]
port = 3307
!include /etc/x.cnf
"""
    items = parse_option_text(text)
    assert ("client", "user", "app") in items
    assert ("client", "password", "p#ss w=rd") in items
    assert ("client", "socket", "/run/mysql.sock") in items
    assert ("client", "prompt", "a b\\c") in items  # \s is a space, \\ a backslash
    assert ("client", "ssl_mode", "DISABLED") in items
    assert ("client", "skip_ssl", None) in items
    assert ("mysqld", "port", "3307") in items
    assert ("!", "!include", "/etc/x.cnf") in items


def test_defaults_file_only_and_client_groups(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".my.cnf").write_text("[client]\nuser=fromhome\n")
    cnf = tmp_path / "only.cnf"
    cnf.write_text("[client]\nuser=a\n[mysqld]\nuser=mysql\nsocket=/srv.sock\n[mysql]\nuser=b\nport=3310\n")
    opts = client_options(str(cnf), home=str(home))
    assert opts == {"user": "b", "port": "3310"}


def test_home_my_cnf_and_includes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    conf_d = tmp_path / "conf.d"
    conf_d.mkdir(parents=True)
    home.mkdir()
    (conf_d / "10-a.cnf").write_text("[client]\nsocket=/from/includedir.sock\n")
    (conf_d / "ignored.txt").write_text("[client]\nsocket=/wrong.sock\n")
    (tmp_path / "inc.cnf").write_text("[client-server]\nport=3311\n")
    (home / ".my.cnf").write_text(
        f"!includedir {conf_d}\n!include {tmp_path / 'inc.cnf'}\n!include {home / '.my.cnf'}\n[client]\nuser=me\n"
    )
    opts = client_options(None, home=str(home))
    assert opts["socket"] == "/from/includedir.sock"
    assert opts["port"] == "3311"
    assert opts["user"] == "me"


def test_missing_and_unreadable_files_are_skipped(tmp_path: Path) -> None:
    assert client_options(str(tmp_path / "absent.cnf")) == {}

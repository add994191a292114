"""The mysql client's option spelling against a real private MariaDB: --defaults-extra-file and
--defaults-group-suffix resolved by my_print_defaults, -h/-P/-u on the command line, and --ssl-mode
REQUIRED refused (never silently downgraded) by a server without TLS."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers import FAKE_PERF, run_cli
from pmuprof.capture.mysql.facts import MysqlOptions, collect_facts
from pmuprof.capture.mysql.tls import Tls
from tests import mariadb as mdb


def _suffixed(mariadb: mdb.MariaDB, tmp_path: Path) -> Path:
    """The right credentials only in [client_prod]; [client] has a wrong password."""
    cnf = tmp_path / "extra.cnf"
    cnf.write_text(
        f'[client]\nuser=sbtest\npassword="wrong"\n'
        f'[client_prod]\npassword="{mariadb.password}"\nhost=127.0.0.1\nport={mariadb.port}\n'
    )
    cnf.chmod(0o600)
    return cnf


def test_group_suffix_and_extra_file_pick_the_credentials(mariadb: mdb.MariaDB, tmp_path: Path) -> None:
    if shutil.which("my_print_defaults") is None:
        pytest.skip("my_print_defaults not installed (apt-get install mariadb-client-core)")
    cnf = _suffixed(mariadb, tmp_path)
    plain = collect_facts(MysqlOptions(defaults_extra_file=str(cnf)), interval_s=0.2)
    assert plain["reachable"] is False  # [client] alone: the wrong password
    facts = collect_facts(MysqlOptions(defaults_extra_file=str(cnf), defaults_group_suffix="_prod"), interval_s=0.2)
    assert facts["reachable"] is True, facts.get("error")
    assert facts["source"] == f"tcp 127.0.0.1:{mariadb.port}"
    assert mariadb.password not in json.dumps(facts)


def test_ssl_required_is_refused_by_a_server_without_tls(mariadb: mdb.MariaDB) -> None:
    base = dict(host="127.0.0.1", port=mariadb.port, user="sbtest", defaults_file=str(mariadb.defaults_file))
    preferred = collect_facts(MysqlOptions(**base, tls=Tls("PREFERRED")), interval_s=0.2)
    have_tls = preferred.get("variables", {}).get("have_ssl") == "YES"
    if have_tls:
        pytest.skip("this private server offers TLS")
    assert preferred["reachable"] is True, preferred.get("error")  # PREFERRED falls back, as mysql does
    required = collect_facts(MysqlOptions(**base, tls=Tls("REQUIRED")), interval_s=0.2)
    assert required["reachable"] is False and "did not offer TLS" in required["error"]


def test_capture_with_mysql_client_short_options(mariadb: mdb.MariaDB, tmp_path: Path) -> None:
    """-h/-P/-u and --defaults-extra-file on the command line reach the server (the fake perf records)."""
    cnf = tmp_path / "pw.cnf"
    cnf.write_text(f'[client]\npassword="{mariadb.password}"\n')
    res = run_cli(
        "capture",
        "-p",
        str(mariadb.pid),
        "-h",
        "127.0.0.1",
        "-P",
        str(mariadb.port),
        "-u",
        "sbtest",
        "--defaults-extra-file",
        str(cnf),
        "-d",
        "1",
        "-q",
        "-o",
        str(tmp_path / "run"),
        env=FAKE_PERF,
    )
    assert res.returncode == 0, res.stderr
    facts = json.loads((tmp_path / "run" / "mysql.json").read_text())
    assert facts["reachable"] is True and facts["source"] == f"tcp 127.0.0.1:{mariadb.port}", facts.get("error")


def _ssl_accepts(server) -> int:
    """The server's TLS handshakes so far, read over a connection that makes none."""
    import pymysql

    conn = pymysql.connect(unix_socket=str(server.socket), user="root", password="", ssl_disabled=True)
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW GLOBAL STATUS LIKE 'Ssl_accepts'")
            return int(cur.fetchone()[1])
    finally:
        conn.close()


def test_facts_over_the_socket_cost_the_server_no_tls_handshake(mariadb114, tmp_path: Path) -> None:
    """MariaDB 11.4 offers TLS by default with a generated RSA-4096 key: ~80 ms of server CPU a handshake.
    Over its socket, with no --ssl-mode, pmuprof negotiates none (MySQL's clients do the same); an
    explicit PREFERRED still does."""
    if dict(mdb.sql(mariadb114, "SHOW GLOBAL VARIABLES LIKE 'have_ssl'")).get("have_ssl") != "YES":
        pytest.skip("this 11.4.5 server offers no TLS")
    cnf = tmp_path / "client.cnf"
    cnf.write_text(f'[client]\nuser={mariadb114.user}\npassword="{mariadb114.password}"\n')
    cnf.chmod(0o600)
    base = dict(socket=str(mariadb114.socket), defaults_file=str(cnf))
    before = _ssl_accepts(mariadb114)
    facts = collect_facts(MysqlOptions(**base), interval_s=0.2)
    assert facts["reachable"] is True, facts.get("error")
    assert _ssl_accepts(mariadb114) == before
    asked = collect_facts(MysqlOptions(**base, tls=Tls("PREFERRED")), interval_s=0.2)
    assert asked["reachable"] is True and _ssl_accepts(mariadb114) > before

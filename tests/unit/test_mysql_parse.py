"""Pure server-fact parsers: family, version, rates, processlist, error log, sockets, secrets."""

from __future__ import annotations

from pmuprof.capture.mysql import parse as mp
from pmuprof.model.server import family_from_name, for_family, server_family


def test_family_and_version() -> None:
    assert server_family("10.11.6-MariaDB-0+deb12u1", "Debian 12") == "mariadb"
    assert server_family("8.0.36-28", "Percona Server (GPL), Release 28") == "percona"
    assert server_family("8.0.36", "MySQL Community Server - GPL") == "mysql"
    assert server_family("") is None and server_family("10.2.11-MariaDB") == "mariadb"
    assert [family_from_name(n) for n in ("mariadbd", "/usr/sbin/mysqld", "mysqld-debug", "python3")] == [
        "mariadb",
        "mysql",
        "mysql",
        None,
    ]
    ranges = {"mysql": ">=8.0", "mariadb": "*"}
    assert [for_family(ranges, f) for f in ("percona", "mariadb", "other")] == [">=8.0", "*", None]
    assert for_family({"mysql": "*", "percona": "<8.0"}, "percona") == "<8.0"
    assert mp.version_tuple("10.11.6-MariaDB-0+deb12u1") == [10, 11, 6]
    assert mp.version_tuple("5.5.5-10.4.32-MariaDB") == [10, 4, 32]
    assert mp.version_tuple("5.7.44-log") == [5, 7, 44]
    assert mp.version_tuple("garbage") == []


def test_rates_skip_gauges_and_text() -> None:
    before = {"Questions": "100", "Threads_running": "3", "Uptime": "10", "Ssl_cipher": "", "Com_select": "5"}
    after = {"Questions": "300", "Threads_running": "9", "Uptime": "12", "Ssl_cipher": "", "Com_select": "5"}
    assert mp.status_rates(before, after, 2.0) == {"Questions": 100.0}
    assert mp.status_rates(before, after, 0.0) == {}


def test_processlist_histogram_skips_own_connection_and_maps_tids() -> None:
    rows = [
        {"ID": 1, "COMMAND": "Query", "STATE": "statistics", "TID": 501},
        {"ID": 2, "COMMAND": "Query", "STATE": "statistics", "TID": 502},
        {"ID": 3, "COMMAND": "Sleep", "STATE": "", "TID": 503},
        {"id": 9, "command": "Query", "state": "Filling schema table", "tid": 509},
        {"ID": 4, "COMMAND": "Daemon", "STATE": None},
    ]
    out = mp.processlist_summary(rows, own_id=9)
    assert out["threads"] == 4
    assert out["states"] == {"statistics": 2, "(none)": 2}
    assert out["commands"] == {"Query": 2, "Sleep": 1, "Daemon": 1}
    assert out["tids"] == {"501": "statistics", "502": "statistics", "503": "(none)"}
    assert out["own_thread"] == 509  # pmuprof's own connection: its samples are its own statements'


def test_error_log_barrier_and_event_mutexes() -> None:
    lines = [
        "2017-01-01T00:00:00 0 [Note] InnoDB: Mutexes and rw_locks use GCC atomic builtins\n",
        "2017-01-01T00:00:00 0 [Note] InnoDB: Uses event mutexes\n",
        "2017-01-01T00:00:00 0 [Note] InnoDB: GCC builtin __sync_synchronize() is used for memory barrier\n",
        "2017-02-01T00:00:00 0 [Note] InnoDB: GCC builtin __atomic_thread_fence() is used for memory barrier\n",
    ]
    out = mp.scan_error_log(lines)
    assert out["memory_barrier"] == "__atomic_thread_fence()"  # the last start-up wins
    assert out["line"].endswith("is used for memory barrier")
    assert out["event_mutexes"] is True
    assert mp.scan_error_log(["nothing\n"]) == {"memory_barrier": None, "line": None, "event_mutexes": False}


NET_UNIX = """Num       RefCount Protocol Flags    Type St Inode Path
0000000000000000: 00000002 00000000 00010000 0001 01 14792 /tmp/x/mysqld.sock
0000000000000000: 00000002 00000000 00010000 0001 01 14793 @abstract
0000000000000000: 00000003 00000000 00000000 0001 03 14794 /tmp/x/mysqld.sock
0000000000000000: 00000002 00000000 00010000 0001 01 15000 /run/other.sock
0000000000000000: 00000002 00000000 00000000 0002 01 15001
"""


def test_listening_sockets_filtered_by_inode() -> None:
    assert mp.listening_unix_sockets(NET_UNIX) == ["/tmp/x/mysqld.sock", "/run/other.sock"]
    assert mp.listening_unix_sockets(NET_UNIX, {14792, 14794}) == ["/tmp/x/mysqld.sock"]


def test_server_args_from_cmdline() -> None:
    argv = ["/usr/sbin/mariadbd", "--socket=/a.sock", "--port=1", "--socket=/b.sock", "", "--loose-pid-file", "/p.pid"]
    argv += ["--defaults-file=/etc/i2.cnf", "--datadir", "/d", "--no-defaults", "--user=mysql", "--skip-grant-tables"]
    assert mp.server_args(argv) == {
        "socket": "/b.sock",
        "port": "1",
        "pid_file": "/p.pid",
        "defaults_file": "/etc/i2.cnf",
        "datadir": "/d",
        "no_defaults": None,
    }
    assert mp.server_args(["/usr/sbin/mysqld"]) == {}
    assert mp.server_args(["/usr/sbin/mysqld", "--socket"]) == {"socket": ""}  # a last word without its value


def test_secret_variables_masked_but_switches_kept() -> None:
    out = mp.mask_secrets(
        {
            "wsrep_sst_auth": "root:hunter2",
            "strict_password_validation": "ON",
            "default_password_lifetime": "0",
            "innodb_spin_wait_delay": "4",
            "simple_password_check_other_characters": "1",
            "some_password": "",
        }
    )
    assert out["wsrep_sst_auth"] == "********"
    assert out["strict_password_validation"] == "ON"
    assert out["default_password_lifetime"] == "0"
    assert out["innodb_spin_wait_delay"] == "4"
    assert out["some_password"] == ""

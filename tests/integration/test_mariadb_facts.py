"""collect_facts against a real private MariaDB under sysbench load."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path

import pytest

from pmuprof.capture.mysql.facts import MysqlOptions, collect_facts
from tests import mariadb as mdb


@pytest.fixture(scope="module")
def facts_under_load(mariadb: mdb.MariaDB) -> dict:
    """Facts taken through the option file (sbtest user + password) while 8 sysbench threads run."""
    load = mdb.SysbenchLoad(mariadb, mdb.UNTIL_STOPPED, test="oltp_read_write", threads=8)
    try:
        mdb.wait_connected(mariadb, 9)  # every client is in the processlist snapshot (the check's own is the 9th)
        facts = collect_facts(MysqlOptions(defaults_file=str(mariadb.defaults_file)), pid=mariadb.pid, interval_s=1.5)
        assert load.proc.poll() is None, "the load ran all through the facts' interval"  # its rates: a test below
    finally:
        load.stop()
    return facts


def test_server_identity(facts_under_load: dict, mariadb: mdb.MariaDB) -> None:
    f = facts_under_load
    assert f["reachable"] is True and f["error"] is None, f.get("error")
    assert f["source"] == f"socket {mariadb.socket}"
    assert f["server"]["family"] == "mariadb"
    assert f["server"]["version_tuple"][0] >= 10
    assert f["server"]["version"].startswith(".".join(map(str, f["server"]["version_tuple"])))
    assert f["pid"] == mariadb.pid


def test_spin_variables_and_rates(facts_under_load: dict) -> None:
    v = facts_under_load["variables"]
    assert v["innodb_spin_wait_delay"].isdigit() and v["innodb_sync_spin_loops"].isdigit()
    status = facts_under_load["status"]
    assert status["interval_s"] >= 1.4
    assert status["rates"]["Questions"] > 0 and status["rates"]["Com_select"] > 0
    assert "Threads_running" in status["before"] and "Threads_running" not in status["rates"]


def test_semaphores_parsed_or_said_empty(facts_under_load: dict) -> None:
    sem = facts_under_load["semaphores"]
    assert sem["found"] is True
    if sem["empty"]:  # MariaDB 10.6+: no sync array
        assert any("SEMAPHORES section empty" in m for m in facts_under_load["missing"])
    else:
        assert sem["latches"]


def test_processlist_states_and_tids(facts_under_load: dict, mariadb: mdb.MariaDB) -> None:
    plist = facts_under_load["processlist"]
    assert plist["threads"] >= 8
    assert sum(plist["states"].values()) == plist["threads"]
    # one snapshot: on a loaded host all eight clients may be between statements (Sleep) at that instant
    assert sum(plist["commands"].values()) == plist["threads"]
    assert set(plist["commands"]) <= {"Sleep", "Query", "Execute", "Prepare", "Close stmt", "Fetch", "Daemon"}
    assert plist["tids"], "MariaDB reports TIDs in information_schema.PROCESSLIST"
    tasks = set(os.listdir(f"/proc/{mariadb.pid}/task"))
    assert set(plist["tids"]) <= tasks  # perf's thread ids


def test_relax_multiplier_and_error_log(facts_under_load: dict, mariadb: mdb.MariaDB) -> None:
    assert facts_under_load["my_cpu_relax_multiplier"] in (100, 200)
    log = facts_under_load["error_log"]
    assert log["path"] == str(mariadb.error_log)
    assert set(log) >= {"memory_barrier", "line", "event_mutexes"}
    assert not any("unreadable" in m for m in facts_under_load["missing"])
    if log["memory_barrier"] is None:  # MariaDB 10.11 does not print it: said, not silently null
        assert any("memory barrier" in m for m in facts_under_load["missing"])


def test_facts_are_json_and_hold_no_password(facts_under_load: dict, mariadb: mdb.MariaDB) -> None:
    text = json.dumps(facts_under_load)
    assert mariadb.password not in text


def _wait_for_state(server: mdb.MariaDB, state: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = mdb.sql(server, f"SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE = '{state}'")
        if rows and rows[0][0]:
            return
        time.sleep(0.05)


def test_query_text_with_secret_not_kept(mariadb: mdb.MariaDB) -> None:
    """A concurrent query holding a literal secret must not reach mysql.json through the processlist."""
    secret = "pmuprof-literal-secret-42"
    worker = threading.Thread(target=mdb.sql, args=(mariadb, f"SELECT SLEEP(3), '{secret}'"))
    worker.start()
    try:
        _wait_for_state(mariadb, "User sleep")  # the query must be running before the snapshot, not racing it
        facts = collect_facts(MysqlOptions(socket=str(mariadb.socket), user="root"), pid=mariadb.pid, interval_s=0.5)
    finally:
        worker.join()
    assert facts["reachable"] and facts["processlist"]["states"].get("User sleep", 0) >= 1
    assert secret not in json.dumps(facts)


def test_finds_socket_from_pid(mariadb: mdb.MariaDB) -> None:
    facts = collect_facts(MysqlOptions(user="root"), pid=mariadb.pid, interval_s=0.2)
    assert facts["reachable"] is True, facts.get("error")
    assert facts["source"] == f"socket {mariadb.socket}"


def test_password_env_and_tcp(mariadb: mdb.MariaDB, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PMUPROF_IT_PW", mariadb.password)
    facts = collect_facts(
        MysqlOptions(host="127.0.0.1", port=mariadb.port, user="sbtest", password_env="PMUPROF_IT_PW"),
        pid=mariadb.pid,
        interval_s=0.2,
    )
    assert facts["reachable"] is True, facts.get("error")
    assert facts["source"] == f"tcp 127.0.0.1:{mariadb.port}"
    assert mariadb.password not in json.dumps(facts)


def test_wrong_password_is_unreachable_without_leak(mariadb: mdb.MariaDB, tmp_path: Path) -> None:
    cnf = tmp_path / "bad.cnf"
    cnf.write_text(f"[client]\nuser=sbtest\npassword=wrong-{mariadb.password}\nsocket={mariadb.socket}\n")
    facts = collect_facts(MysqlOptions(defaults_file=str(cnf)), pid=mariadb.pid)
    assert facts["reachable"] is False and "Access denied" in facts["error"]
    assert mariadb.password not in json.dumps(facts)


def test_unreachable_is_quick(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert collect_facts(MysqlOptions(host="127.0.0.1", port=port, connect_timeout=2))["reachable"] is False
    assert collect_facts(MysqlOptions(socket=str(tmp_path / "x.sock")))["reachable"] is False


def test_debian_style_root_unix_socket_auth() -> None:
    """Debian's root@localhost uses unix_socket auth: running as root with no options must still connect."""
    if os.geteuid() != 0:
        pytest.skip("unix_socket authentication as root needs euid 0")
    server = mdb.start_mariadb(root_auth="socket")
    try:
        facts = collect_facts(MysqlOptions(), pid=server.pid, interval_s=0.2)
    finally:
        mdb.stop_mariadb(server)
    assert facts["reachable"] is True, facts.get("error")
    assert facts["source"] == f"socket {server.socket}"


def test_a_capture_that_ends_early_gets_its_closing_read_at_once(mariadb: mdb.MariaDB, tmp_path: Path) -> None:
    """The facts' status interval is at most the window: once the capture stops them, the closing status read
    is made then, not when the interval would have ended (a saturated server answers the first reads late)."""
    from pmuprof.capture.lifecycle import Context
    from pmuprof.capture.mysql.serverfacts import ServerFacts
    from pmuprof.capture.options import RecordOptions
    from pmuprof.model import rundir
    from pmuprof.model.run import Run

    opts = RecordOptions(
        pids=(mariadb.pid,), out_dir=tmp_path, mysql_options=MysqlOptions(defaults_file=str(mariadb.defaults_file))
    )
    ctx = Context(opts, (mariadb.pid,), Run())
    source = ServerFacts.of(ctx)
    assert source is not None and source.interval_s == 5.0
    source.start(ctx)
    assert ctx.window.one_off_sql.wait(60), "the facts' first reads never ended"
    asked = time.monotonic()
    part = source.stop(ctx)
    assert time.monotonic() - asked < 4.0 and part.why_not == "", part
    facts = json.loads((tmp_path / rundir.MYSQL).read_text())
    assert facts["reachable"] and facts["status"]["interval_s"] < 4.0, facts["status"]["interval_s"]
    assert facts["status"]["after"]["Uptime"]

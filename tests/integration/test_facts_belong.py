"""Server facts belong to the target pid, against two real servers on one host (Debian's MariaDB 10.11 and
MariaDB 11.4.5): an option file, ~/.my.cnf, -S or -h/-P naming the other server gives the target's facts or
none, never the other's; doctor says which server answered instead; the processlist poller is refused too."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from helpers import FAKE_PERF, run_cli
from pmuprof.capture.mysql.facts import MysqlOptions, collect_facts
from pmuprof.capture.mysql import connect, procnet
from pmuprof.errors import FactsError
from tests import mariadb as mdb


@pytest.fixture(autouse=True)
def _root() -> None:
    if os.geteuid() != 0:
        pytest.skip("the TCP proof reads the target's /proc/PID/fd: root here")


def _version(server: mdb.MariaDB) -> str:
    return str(mdb.sql(server, "SELECT VERSION()")[0][0])


def _cnf(tmp_path: Path, name: str, password: str, sock: Path) -> Path:
    """A client option file: the sbtest user with ``password``, and ``sock`` as its socket."""
    cnf = tmp_path / name
    cnf.write_text(f'[client]\nuser=sbtest\npassword="{password}"\nsocket={sock}\n')
    cnf.chmod(0o600)
    return cnf


def test_an_option_file_naming_the_other_server_is_refused(mariadb, mariadb114, tmp_path: Path) -> None:
    """Target 10.11, option file with 11.4's socket and password: 10.11's own socket is tried first and
    refuses the password; 11.4 answers and is refused by its listener pid, named with its version."""
    target, other = mariadb, mariadb114
    facts = collect_facts(MysqlOptions(defaults_file=str(other.defaults_file)), pid=target.pid, interval_s=0.2)
    assert facts["reachable"] is False, facts.get("source")
    error = facts["error"]
    assert f"reached pid {other.pid} ({'MariaDB'} {_version(other)}" in error, error
    assert f"not pid {target.pid}" in error and f"pass -S {target.socket}" in error, error
    assert other.password not in json.dumps(facts) and "variables" not in facts


def test_the_targets_own_socket_wins_over_an_option_file(mariadb, mariadb114, tmp_path: Path) -> None:
    """The right password, the other server's socket in the file: the target's own socket is found in
    /proc and proven; the facts are the target's."""
    target, other = mariadb114, mariadb
    cnf = _cnf(tmp_path, "mixed.cnf", target.password, other.socket)
    facts = collect_facts(MysqlOptions(defaults_file=str(cnf)), pid=target.pid, interval_s=0.2)
    assert facts["reachable"] is True, facts.get("error")
    assert facts["source"] == f"socket {target.socket}" and facts["pid"] == target.pid
    assert facts["server"]["version"] == _version(target) and "SO_PEERCRED" in facts["proof"]
    assert facts["variables"]["datadir"].rstrip("/") == str(target.datadir)


@pytest.mark.parametrize("how", ["socket", "tcp"])
def test_explicit_options_are_checked_too(mariadb, mariadb114, how: str) -> None:
    target, other = mariadb, mariadb114
    where = dict(socket=str(other.socket)) if how == "socket" else dict(host="127.0.0.1", port=other.port)
    opts = MysqlOptions(defaults_file=str(other.defaults_file), **where)
    with pytest.raises(ConnectionError) as refused:
        connect.connect(opts, target.pid)
    assert f"reached pid {other.pid}" in str(refused.value) and f"not pid {target.pid}" in str(refused.value)
    conn, ep, _ = connect.connect(opts, other.pid)  # the same options prove the other server
    conn.close()
    assert ("SO_PEERCRED" if how == "socket" else "TCP connection") in ep.proof


def test_capture_with_home_my_cnf_naming_the_other(mariadb, mariadb114, tmp_path: Path) -> None:
    """The issue's case: ~/.my.cnf names the other server on the same host. capture -p PID records no
    server facts and no processlist, and says which server answered and how to reach the target."""
    target, other = mariadb114, mariadb
    home = tmp_path / "home"
    home.mkdir()
    (home / ".my.cnf").write_text(other.defaults_file.read_text())
    (home / ".my.cnf").chmod(0o600)
    out = tmp_path / "run"
    res = run_cli(
        "capture", "-p", str(target.pid), "-d", "2", "-q", "-o", str(out), env={**FAKE_PERF, "HOME": str(home)}
    )
    # a degraded run: the report is written, the exit says the facts were asked for and not collected
    assert res.returncode == FactsError.exit_code, res.stderr
    assert (out / "report.html").is_file() and "the report has the stacks only" in res.stderr
    facts = json.loads((out / "mysql.json").read_text())
    assert facts["reachable"] is False and f"reached pid {other.pid}" in facts["error"], facts
    assert f"pass -S {target.socket}" in facts["error"]
    assert not (out / "processlist.tsv").exists() or len((out / "processlist.tsv").read_text().splitlines()) <= 1
    warnings = json.loads((out / "run.json").read_text())["warnings"]
    assert any(f"reached pid {other.pid}" in w for w in warnings if w.startswith("processlist not polled")), warnings
    assert other.password not in res.stderr + (out / "run.json").read_text()


def test_doctor_names_the_server_that_answered(mariadb, mariadb114) -> None:
    target, other = mariadb, mariadb114
    both = run_cli(
        "doctor",
        "--json",
        "-p",
        str(target.pid),
        str(other.pid),
        "-S",
        str(other.socket),
        "--defaults-file",
        str(other.defaults_file),
    )  # -p $(pidof ...) as the shell splits it
    checks = [c for c in json.loads(both.stdout)["checks"] if c["id"] == "mysql"]
    by_pid = {c["pid"]: c for c in checks}
    assert set(by_pid) == {target.pid, other.pid}, checks
    assert by_pid[target.pid]["ok"] is False and f"reached pid {other.pid}" in by_pid[target.pid]["detail"]
    assert _version(other) in by_pid[target.pid]["detail"]
    assert by_pid[other.pid]["ok"] is True and "SO_PEERCRED" in by_pid[other.pid]["detail"]
    assert other.password not in both.stdout + both.stderr


def test_without_root_the_serving_thread_proves_it(mariadb, mariadb114, monkeypatch: pytest.MonkeyPatch) -> None:
    """The target's fds unreadable (as for a non-root pmuprof; checked by hand as nobody with setpriv): over TCP
    the thread the server names in PROCESSLIST.TID is among the target's tasks; the other server is refused
    by the target's own --pid-file."""

    def denied(pid: int) -> set[int]:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(procnet, "socket_inodes", denied)
    for target, other in ((mariadb, mariadb114), (mariadb114, mariadb)):
        opts = MysqlOptions(host="127.0.0.1", port=target.port, defaults_file=str(target.defaults_file))
        conn, ep, _ = connect.connect(opts, target.pid)
        conn.close()
        assert f"is pid {target.pid}'s (pid {target.pid}'s sockets are not readable" in ep.proof, ep.proof
        with pytest.raises(ConnectionError) as refused:
            connect.connect(opts, other.pid)
        assert f"not proven to be pid {other.pid}" in str(refused.value)
        assert f"was started with --pid-file={other.workdir}" in str(refused.value)

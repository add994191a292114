"""The connection proof on canned /proc trees: a unix socket's listener pid, the server end of a TCP connection
among the target's sockets, the pid-file fallback and what refutes it; and where a target listens."""

from __future__ import annotations

import socket
import struct
from pathlib import Path

import pytest

from pmuprof.capture.mysql import connect, discover, procnet, proof

TARGET, OTHER, INIT = 100, 200, 1
CLIENT = ("127.0.0.1", 50123)  # our end of the connection
HEADER = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
HEADER6 = "  sl  local_address                         remote_address                        st ... inode\n"
UNIX_HEADER = "Num       RefCount Protocol Flags    Type St Inode Path\n"


def hex4(ip: str, port: int) -> str:
    """An IPv4 endpoint as /proc/net/tcp prints it (the address word in host byte order)."""
    return f"{struct.unpack('=I', socket.inet_aton(ip))[0]:08X}:{port:04X}"


def hex6(ip: str, port: int) -> str:
    raw = socket.inet_pton(socket.AF_INET6, ip)
    words = (struct.unpack("=I", raw[i : i + 4])[0] for i in range(0, 16, 4))
    return "".join(f"{w:08X}" for w in words) + f":{port:04X}"


def tcp_line(local: str, remote: str, state: int, inode: int) -> str:
    return f"   0: {local} {remote} {state:02X} 00000000:00000000 00:00000000 00000000     0        0 {inode} 1 0\n"


def process(root: Path, pid: int, comm: str, inodes: list[int], argv: list[str], nspid: str = "") -> Path:
    d = root / str(pid)
    (d / "fd").mkdir(parents=True)
    (d / "net").mkdir()
    for fd, inode in enumerate(inodes, start=3):
        (d / "fd" / str(fd)).symlink_to(f"socket:[{inode}]")  # a dangling link reads as the kernel's text
    (d / "fd" / "0").symlink_to("/dev/null")
    (d / "comm").write_text(comm + "\n")
    (d / "cmdline").write_text("\0".join(argv) + "\0")
    (d / "status").write_text(f"Name:\t{comm}\nNSpid:\t{nspid or pid}\n")
    return d


@pytest.fixture
def proc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two servers on one host: the target (unix socket inode 11, TCP listener 12 on 0.0.0.0:3307, the
    accepted connection 13 from CLIENT) and another (unix 21, listener 22 on 127.0.0.1:3306, accepted 23)."""
    root = tmp_path / "proc"
    argv = ["/opt/m114/bin/mariadbd", "--datadir=/srv/a", "--pid-file=/srv/a/a.pid", "--port=3307"]
    process(root, TARGET, "mariadbd", [11, 12, 13], argv)
    process(root, OTHER, "mariadbd", [21, 22], ["/usr/sbin/mariadbd"])
    process(root, INIT, "systemd", [], ["/sbin/init"])
    table = HEADER + tcp_line(hex4("0.0.0.0", 3307), hex4("0.0.0.0", 0), procnet.LISTEN, 12)
    table += tcp_line(hex4("127.0.0.1", 3306), hex4("0.0.0.0", 0), procnet.LISTEN, 22)
    unix = UNIX_HEADER + "0000: 00000002 00000000 00010000 0001 01 11 /srv/a/a.sock\n"
    unix += "0000: 00000002 00000000 00010000 0001 01 21 /run/mysqld/mysqld.sock\n"
    for pid in (TARGET, OTHER, "self"):
        (root / str(pid) / "net").mkdir(parents=True, exist_ok=True)
        (root / str(pid) / "net" / "tcp").write_text(table)
        (root / str(pid) / "net" / "tcp6").write_text(HEADER6)
        (root / str(pid) / "net" / "unix").write_text(unix)
    monkeypatch.setattr(procnet, "PROC", str(root))
    return root


def accepted(root: Path, inode: int, server: tuple[str, int] = ("127.0.0.1", 3307), v6: bool = False) -> None:
    """The server end of our connection, with ``inode``, in every network namespace of the tree."""
    for pid in (TARGET, OTHER, "self"):
        name = "tcp6" if v6 else "tcp"
        text = (root / str(pid) / "net" / name).read_text()
        enc = hex6 if v6 else hex4
        client = ("::ffff:" + CLIENT[0], CLIENT[1]) if v6 else CLIENT
        (root / str(pid) / "net" / name).write_text(
            text + tcp_line(enc(*server), enc(*client), procnet.ESTABLISHED, inode)
        )


ANSWER = proof.Answer("11.4.5-MariaDB", "", "/srv/a/a.pid", "/srv/a/a.sock", 3307, "/srv/a/", "db1")
TCP = proof.Link(False, local=CLIENT, remote=("127.0.0.1", 3307))


def test_tcp_tables_parse_v4_v6_and_mapped_addresses() -> None:
    text = HEADER + tcp_line(hex4("10.1.2.3", 3306), hex4("10.9.8.7", 40000), procnet.ESTABLISHED, 77)
    text6 = HEADER6 + tcp_line(hex6("::1", 3306), hex6("::ffff:127.0.0.1", 4000), procnet.LISTEN, 78)
    assert procnet.parse_tcp(text) == [procnet.TcpSocket(("10.1.2.3", 3306), ("10.9.8.7", 40000), 1, 77)]
    assert procnet.parse_tcp(text6) == [procnet.TcpSocket(("::1", 3306), ("127.0.0.1", 4000), 10, 78)]
    assert procnet.parse_tcp(HEADER + "   0: garbage\n") == []
    assert procnet.normal(("::ffff:10.0.0.1", 5, 0, 0)) == ("10.0.0.1", 5)


def test_unix_listener_is_the_target(proc: Path) -> None:
    got = proof.prove(TARGET, proof.Link(True, peer_pid=TARGET), ANSWER)
    assert got.ok and "SO_PEERCRED" in got.how


def test_unix_listener_is_another_server(proc: Path) -> None:
    got = proof.prove(TARGET, proof.Link(True, peer_pid=OTHER), ANSWER)
    assert got.ok is False and got.other == OTHER and "SO_PEERCRED" in got.why


def test_socket_activation_falls_back_to_the_pid_file(proc: Path, tmp_path: Path) -> None:
    """systemd created the listener (SO_PEERCRED says pid 1): the server's pid file decides."""
    pid_file = tmp_path / "a.pid"
    pid_file.write_text(f"{TARGET}\n")
    answer = proof.Answer("11.4.5-MariaDB", "", str(pid_file), "/srv/a/a.sock", 3307, "/srv/a/", "db1")
    (proc / str(TARGET) / "cmdline").write_text("/opt/m114/bin/mariadbd\0")
    got = proof.prove(TARGET, proof.Link(True, peer_pid=INIT), answer)
    assert got.ok and "pid file" in got.how and "systemd" in got.how
    pid_file.write_text(f"{OTHER}\n")
    got = proof.prove(TARGET, proof.Link(True, peer_pid=INIT), answer)
    assert got.ok is False and got.other == OTHER and f"names pid {OTHER}" in got.why


def test_tcp_server_end_is_the_targets(proc: Path) -> None:
    accepted(proc, 13)
    got = proof.prove(TARGET, TCP, ANSWER)
    assert got.ok and "TCP connection" in got.how


def test_tcp_server_end_through_a_dual_stack_listener(proc: Path) -> None:
    """A server on [::] accepts an IPv4 client as ::ffff:127.0.0.1 in tcp6."""
    accepted(proc, 13, ("::ffff:127.0.0.1", 3307), v6=True)
    assert proof.prove(TARGET, TCP, ANSWER).ok


def test_tcp_server_end_is_another_servers(proc: Path) -> None:
    (proc / str(OTHER) / "fd" / "9").symlink_to("socket:[23]")
    accepted(proc, 23, ("127.0.0.1", 3306))
    got = proof.prove(TARGET, proof.Link(False, local=CLIENT, remote=("127.0.0.1", 3306)), ANSWER)
    assert got.ok is False and got.other == OTHER


def test_tcp_server_end_in_no_server(proc: Path) -> None:
    """A proxy's end, in our network namespace: refused, not guessed."""
    accepted(proc, 99)
    got = proof.prove(TARGET, TCP, ANSWER)
    assert got.ok is False and got.other is None and "not pid 100's" in got.why


def test_a_server_on_another_host_is_refused(proc: Path) -> None:
    got = proof.prove(TARGET, proof.Link(False, local=CLIENT, remote=("192.0.2.7", 3306)), ANSWER)
    assert got.ok is False and "another host (192.0.2.7, hostname db1)" in got.why


def test_unreadable_fds_fall_back_to_the_pid_file(proc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def denied(pid: int) -> set[int]:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(procnet, "socket_inodes", denied)
    pid_file = tmp_path / "a.pid"
    pid_file.write_text(f"{TARGET}")
    answer = proof.Answer("11.4.5-MariaDB", "", str(pid_file), "/srv/a/a.sock", 3307, "/srv/a/", "db1")
    (proc / str(TARGET) / "cmdline").write_text(f"mariadbd\0--pid-file={pid_file}\0--datadir=/srv/a/\0")
    got = proof.prove(TARGET, TCP, answer)
    assert got.ok and "not readable here (not root)" in got.how
    (proc / str(TARGET) / "cmdline").write_text(f"mariadbd\0--pid-file={pid_file}\0--datadir=/srv/b\0")
    got = proof.prove(TARGET, TCP, answer)  # the same pid file, yet the target was started on another datadir
    assert got.ok is False and "--datadir=/srv/b, the server says /srv/a/" in got.why
    (proc / str(TARGET) / "status").write_text(f"NSpid:\t{TARGET}\t1\n")
    got = proof.prove(TARGET, TCP, answer)  # a container's pid namespace: its pid file holds another number
    assert got.ok is False and "container" in got.why


def test_where_the_target_listens(proc: Path) -> None:
    own = discover.listening(TARGET)
    assert own == discover.Listening(TARGET, ("/srv/a/a.sock",), (("127.0.0.1", 3307),), True)
    assert "pid 100 listens on socket /srv/a/a.sock, tcp 127.0.0.1:3307: pass -S /srv/a/a.sock" in own.advice()
    files = {"socket": "/run/mysqld/mysqld.sock", "port": "3306"}
    order = [str(e) for e in connect.endpoints(connect.MysqlOptions(), files, own)]
    assert order[:3] == ["socket /srv/a/a.sock", "tcp 127.0.0.1:3307", "socket /run/mysqld/mysqld.sock"]
    explicit = connect.endpoints(connect.MysqlOptions(socket="/x.sock"), files, own)
    assert [str(e) for e in explicit] == ["socket /x.sock"]  # explicit options are the only endpoint (checked)


def test_unreadable_fds_read_the_command_line_and_its_option_files(proc: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def denied(pid: int) -> set[int]:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(procnet, "socket_inodes", denied)
    etc = proc / str(TARGET) / "root" / "etc"
    etc.mkdir(parents=True)
    (etc / "i2.cnf").write_text("[client]\nsocket=/wrong.sock\n[mysqld]\nsocket=/srv/i2.sock\nport=3310\n")
    argv = ["mariadbd", "--defaults-file=/etc/i2.cnf", "--port", "3311", "--bind-address=10.0.0.5"]
    (proc / str(TARGET) / "cmdline").write_text("\0".join(argv) + "\0")
    own = discover.listening(TARGET)
    assert own.sockets == ("/srv/i2.sock",) and own.ports == (("10.0.0.5", 3311),) and not own.seen
    assert "is configured for" in own.advice()
    (proc / str(TARGET) / "cmdline").write_text("mariadbd\0--no-defaults\0--defaults-file=/etc/i2.cnf\0")
    assert discover.listening(TARGET).sockets == ()


def test_unreadable_fds_and_the_serving_thread(proc: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not root: the thread the server says serves this connection decides, /proc/PID/task being
    world-readable; the pid file is not read then."""

    def denied(pid: int) -> set[int]:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(procnet, "socket_inodes", denied)
    (proc / str(TARGET) / "task" / "105").mkdir(parents=True)
    (proc / "205").mkdir()
    (proc / "205" / "status").write_text(f"Name:\tone_connection\nTgid:\t{OTHER}\n")
    answer = ANSWER  # its pid file, /srv/a/a.pid, is not on this host
    got = proof.prove(TARGET, TCP, answer, lambda: 105)
    assert got.ok and got.how.startswith(f"the thread serving this connection (105) is pid {TARGET}'s")
    got = proof.prove(TARGET, TCP, answer, lambda: 205)
    assert got.ok is False and got.other == OTHER and "(205) is not pid 100's" in got.why
    got = proof.prove(TARGET, TCP, answer, lambda: None)  # no thread id (MySQL without P_S): the pid file
    assert got.ok is False and "pid file /srv/a/a.pid is not readable" in got.why

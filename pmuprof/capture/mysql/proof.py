"""Whether a server connection reaches the target process: the kernel's word on the connection first, the
server's pid file only when the connection's other end cannot be seen.

1. A unix socket: the listener's pid the kernel keeps with the connection (SO_PEERCRED, translated into our
   pid namespace, so a container's server is seen by its host pid). It is the target, or a mysqld /
   mariadbd that is not (refused, named), or another process, e.g. systemd for a socket-activated server
   (undecided).
2. TCP: the server end of this very connection (the socket whose remote end is our local address and port;
   behind a DNAT its local address differs, its remote does not) is among the target's open sockets in the
   target's network namespace (/proc/PID/fd, /proc/PID/net/tcp[6]); else among another server's (refused,
   named). A server address that is not one of this host's is refused: facts from another host cannot
   belong to a local pid. Undecided when the target's fds cannot be read (not root) or the end is in no
   process here and the target has its own network namespace (a proxy into a container).
3. Undecided, and nothing on the target's command line contradicts the server's answer (its --pid-file,
   --datadir, --socket, --port), the target being in our pid namespace: the thread the server says serves
   this connection (MariaDB's PROCESSLIST.TID, MySQL's performance_schema.threads.THREAD_OS_ID) is one of
   the target's (/proc/PID/task/TID, world-readable: this works without root); not one of them: refused.
4. Still undecided: the server's @@pid_file, read here, names the target. Else refused.
"""

from __future__ import annotations

import os
import socket
import struct
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable

from ...model.server import FAMILY_NAMES, server_family
from . import parse as mp
from . import procnet

ANSWER_SQL = "SELECT @@version, @@version_comment, @@pid_file, @@socket, @@port, @@datadir, @@hostname"
TID_SQL = (  # the OS thread serving this connection: MariaDB 10.1+, then MySQL 5.7+ with performance_schema ON
    "SELECT TID FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()",
    "SELECT THREAD_OS_ID FROM performance_schema.threads WHERE PROCESSLIST_ID = CONNECTION_ID()",
)


@dataclass(frozen=True)
class Answer:
    """What the server says about itself (global variables any user may read)."""

    version: str = ""
    comment: str = ""
    pid_file: str = ""
    socket: str = ""
    port: int | None = None
    datadir: str = ""
    hostname: str = ""

    def words(self) -> str:
        """'MariaDB 10.11.6-MariaDB-0+deb12u1, socket /run/mysqld/mysqld.sock, port 3306, datadir /var/lib/mysql/'."""
        family = FAMILY_NAMES.get(server_family(self.version, self.comment) or "", "")
        parts = [f"{family} {self.version}".strip() or "unknown version"]
        parts += [f"socket {self.socket}"] if self.socket else []
        parts += [f"port {self.port}"] if self.port else []
        parts += [f"datadir {self.datadir}"] if self.datadir else []
        return ", ".join(parts)


def ask(conn: Any) -> Answer:
    with conn.cursor() as cur:
        cur.execute(ANSWER_SQL)
        version, comment, pid_file, sock, port, datadir, hostname = cur.fetchone()
    text = [str(v or "") for v in (version, comment, pid_file, sock, datadir, hostname)]
    return Answer(text[0], text[1], text[2], text[3], int(port) if str(port or "").isdigit() else None, *text[4:])


@dataclass(frozen=True)
class Link:
    """What our end of the connection tells: the listener's pid (unix), or both addresses (TCP)."""

    unix: bool
    peer_pid: int | None = None
    local: tuple[str, int] | None = None
    remote: tuple[str, int] | None = None


def link_of(sock: socket.socket) -> Link:
    """Read from the connected socket itself (an SSL socket reads the same descriptor)."""
    if sock.family == socket.AF_UNIX:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        pid = struct.unpack("3i", creds)[0]
        return Link(True, peer_pid=pid or None)
    return Link(False, local=procnet.normal(sock.getsockname()), remote=procnet.normal(sock.getpeername()))


@dataclass(frozen=True)
class Proof:
    """``ok`` True: the connection reaches the target, ``how`` says by what. False: refused, ``why`` says
    which process answered (``other`` when known). None: undecided (``why`` says what could not be seen)."""

    ok: bool | None
    how: str = ""
    why: str = ""
    other: int | None = None


def serving_tid(conn: Any) -> int | None:
    """The OS thread id the server says serves this connection (in the server's pid namespace), or None."""
    for sql in TID_SQL:
        try:
            with conn.cursor() as cur:
                cur.execute(sql)
                row = cur.fetchone()
        except Exception:  # noqa: BLE001 - no such column or table on this server: try the next
            continue
        if row and str(row[0]).isdigit():
            return int(row[0])
    return None


def prove(pid: int, link: Link | None, answer: Answer, serving: Callable[[], int | None] = lambda: None) -> Proof:
    """Whether the connection described by ``link``, whose server gave ``answer``, reaches ``pid``;
    ``serving`` is asked for the serving thread's id only when the connection itself cannot be seen."""
    if link is None:
        kernel = Proof(None, why="the connection's socket is not visible")
    else:
        kernel = _unix(pid, link) if link.unix else _tcp(pid, link, answer)
    if kernel.ok is not None:
        return kernel
    if procnet.nested_pid(pid):
        return Proof(False, why=f"{kernel.why}, and pid {pid} is in a container's pid namespace: connect by its socket")
    clash = contradiction(pid, answer)
    if clash:
        return Proof(False, why=f"{kernel.why}, and {clash}")
    for fallback in (lambda: _thread(pid, serving()), lambda: _pid_file(pid, answer)):
        found = fallback()
        if found.ok:
            return Proof(True, f"{found.how} ({kernel.why})")
        if found.ok is False:
            return Proof(False, why=f"{kernel.why}, and {found.why}", other=found.other)
    return Proof(False, why=f"{kernel.why}, and {found.why}")


def _thread(pid: int, tid: int | None) -> Proof:
    """The serving thread among the target's (both in our pid namespace: the caller checked the target)."""
    if tid is None:
        return Proof(None, why="the server does not say which thread serves the connection")
    if os.path.isdir(f"{procnet.PROC}/{pid}/task/{tid}"):
        return Proof(True, f"the thread serving this connection ({tid}) is pid {pid}'s")
    owner = next(
        (
            int(ln.split()[1])
            for ln in procnet.read_text(f"{procnet.PROC}/{tid}/status").splitlines()
            if ln.startswith("Tgid:")
        ),
        None,
    )
    named = owner if owner and _comm(owner) in procnet.SERVER_COMMS else None
    return Proof(False, why=f"the thread serving this connection ({tid}) is not pid {pid}'s", other=named)


def _comm(pid: int) -> str:
    return procnet.read_text(f"{procnet.PROC}/{pid}/comm").strip()


def _unix(pid: int, link: Link) -> Proof:
    peer = link.peer_pid
    if peer == pid:
        return Proof(True, f"the socket's listener is pid {pid} (SO_PEERCRED)")
    if peer and _comm(peer) in procnet.SERVER_COMMS:
        return Proof(False, why="the socket's listener, SO_PEERCRED", other=peer)
    who = f"pid {peer} ({_comm(peer) or 'gone'})" if peer else "a process in no pid namespace of ours"
    return Proof(None, why=f"the socket's listener is {who}, not a server (socket activation?)")


def _tcp(pid: int, link: Link, answer: Answer) -> Proof:
    local, address = link.local or ("", 0), (link.remote or ("", 0))[0]
    if not procnet.is_local_address(address):
        return Proof(
            False,
            why=f"the server is on another host ({address}, hostname {answer.hostname or '?'}): "
            f"facts from another host cannot belong to local pid {pid}",
        )
    try:
        mine = procnet.socket_inodes(pid)
    except PermissionError:
        return Proof(None, why=f"pid {pid}'s sockets are not readable here (not root)")
    if mine & set(procnet.accepted_from(procnet.tcp_table(pid), local)):
        return Proof(True, f"the server end of this TCP connection is pid {pid}'s")
    ends = set(procnet.accepted_from(procnet.tcp_table("self"), local))
    for other in procnet.server_pids() if ends else []:
        try:
            if other != pid and procnet.socket_inodes(other) & ends:
                return Proof(False, why="the server end of this TCP connection", other=other)
        except PermissionError:
            continue
    if procnet.same_namespace(pid, "net") is False:
        return Proof(None, why=f"pid {pid} has its own network namespace and no end of this connection (a proxy?)")
    return Proof(False, why=f"the server end of this TCP connection is not pid {pid}'s (a proxy or another host?)")


def _pid_file(pid: int, answer: Answer) -> Proof:
    """The last fallback: the server's own pid file, read here, names the target."""
    path = answer.pid_file
    text = procnet.read_text(path).strip() if path.startswith("/") else ""
    if not text.isdigit():
        return Proof(False, why=f"its pid file {path or '(none)'} is not readable here")
    if int(text) != pid:
        named = int(text)
        return Proof(False, why=f"its pid file {path} names pid {named}", other=named if _comm(named) else None)
    return Proof(True, f"its pid file {path} names pid {pid}")


def contradiction(pid: int, answer: Answer) -> str:
    """What on ``pid``'s command line disagrees with the server's answer ("" when nothing does)."""
    args = mp.server_args(procnet.read_text(f"{procnet.PROC}/{pid}/cmdline").split("\0"))
    said = {"pid_file": answer.pid_file, "datadir": answer.datadir, "socket": answer.socket, "port": answer.port}
    for key, value in said.items():
        given = args.get(key)
        if key != "port" and not (given or "").startswith("/"):
            continue  # a relative path was relative to a directory the server has left
        if given and value not in (None, "") and _norm(given) != _norm(str(value)):
            return f"pid {pid} was started with --{key.replace('_', '-')}={given}, the server says {value}"
    return ""


def _norm(value: str) -> str:
    return value.rstrip("/") or value

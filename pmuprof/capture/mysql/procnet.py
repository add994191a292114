"""A process's sockets as /proc shows them: its socket inodes, its TCP table, its listening endpoints."""

from __future__ import annotations

import ipaddress
import os
import socket
import struct
from dataclasses import dataclass
from collections.abc import Iterable

from ... import infile

LISTEN, ESTABLISHED = 0x0A, 0x01
_READ_MAX = 64 << 20  # at most this much of a /proc file (the TCP table of a busy host: some MiB)
SERVER_COMMS = ("mysqld", "mariadbd")
PROC = "/proc"  # tests point it at a canned tree


@dataclass(frozen=True)
class TcpSocket:
    """One line of /proc/PID/net/tcp or tcp6; IPv4-mapped IPv6 addresses are written as IPv4."""

    local: tuple[str, int]
    remote: tuple[str, int]
    state: int
    inode: int


def read_text(path: str) -> str:
    """A /proc file (or a small regular file) as text; "" when missing, unreadable or not a regular file."""
    try:
        with infile.opened(path, infile.SMALL_MAX_BYTES) as fh:
            return fh.read(_READ_MAX).decode("utf-8", "replace")  # /proc files say size 0: bound the read
    except OSError:
        return ""


_MAPPED = b"\0" * 10 + b"\xff\xff"  # ::ffff:a.b.c.d


def _address(hexaddr: str) -> str:
    """The kernel prints each 32-bit word of an address in host byte order."""
    raw = b"".join(struct.pack("=I", int(hexaddr[i : i + 8], 16)) for i in range(0, len(hexaddr), 8))
    if len(raw) == 16 and raw[:12] != _MAPPED:
        return socket.inet_ntop(socket.AF_INET6, raw)
    return socket.inet_ntoa(raw[-4:])


def normal(endpoint: tuple) -> tuple[str, int]:
    """(address, port) of a socket address as Python gives it, IPv4-mapped IPv6 written as IPv4."""
    addr = ipaddress.ip_address(str(endpoint[0]).split("%")[0])
    mapped = getattr(addr, "ipv4_mapped", None)
    return str(mapped or addr), int(endpoint[1])


def parse_tcp(text: str) -> list[TcpSocket]:
    """The sockets of /proc/net/tcp or /proc/net/tcp6 text (a malformed line is skipped)."""
    out = []
    for line in text.splitlines()[1:]:
        parts = line.split()
        if len(parts) < 10 or not parts[9].isdigit():
            continue
        try:
            (la, lp), (ra, rp) = (p.split(":") for p in parts[1:3])
            out.append(
                TcpSocket((_address(la), int(lp, 16)), (_address(ra), int(rp, 16)), int(parts[3], 16), int(parts[9]))
            )
        except ValueError:
            continue
    return out


def inodes_of_links(links: Iterable[str]) -> set[int]:
    """Socket inodes from /proc/PID/fd link texts (``socket:[12345]``)."""
    return {int(link[8:-1]) for link in links if link.startswith("socket:[") and link[8:-1].isdigit()}


def socket_inodes(pid: int) -> set[int]:
    """The inodes of ``pid``'s open sockets. PermissionError when its fds cannot be read (another user's
    process, not root); an empty set when it is gone."""
    links = []
    try:
        names = os.listdir(f"{PROC}/{pid}/fd")
    except PermissionError:
        raise
    except OSError:
        return set()
    for fd in names:
        try:
            links.append(os.readlink(f"{PROC}/{pid}/fd/{fd}"))
        except OSError:
            continue
    return inodes_of_links(links)


def tcp_table(pid: int | str) -> list[TcpSocket]:
    """Every TCP socket of ``pid``'s network namespace (``"self"``: ours)."""
    return parse_tcp(read_text(f"{PROC}/{pid}/net/tcp")) + parse_tcp(read_text(f"{PROC}/{pid}/net/tcp6"))


def listening_tcp(table: Iterable[TcpSocket], inodes: set[int]) -> list[tuple[str, int]]:
    """(address, port) of the listening sockets among ``inodes``, in table order, each once."""
    out: list[tuple[str, int]] = []
    for sock in table:
        if sock.state == LISTEN and sock.inode in inodes and sock.local not in out:
            out.append(sock.local)
    return out


def accepted_from(table: Iterable[TcpSocket], client: tuple[str, int]) -> list[int]:
    """Inodes of the server ends of connections from ``client`` (address, port): sockets whose remote end
    it is. Behind a DNAT the server end's local address differs from the one the client dialled, its remote
    does not."""
    return [s.inode for s in table if s.remote == client and s.state == ESTABLISHED and s.inode]


def server_pids() -> list[int]:
    """Running mysqld / mariadbd processes."""
    found = []
    for name in os.listdir(PROC):
        if name.isdigit() and read_text(f"{PROC}/{name}/comm").strip() in SERVER_COMMS:
            found.append(int(name))
    return sorted(found)


def same_namespace(pid: int, kind: str) -> bool | None:
    """Whether ``pid`` shares our ``kind`` namespace (net, pid, mnt); None when that cannot be read."""
    try:
        return os.stat(f"{PROC}/{pid}/ns/{kind}").st_ino == os.stat(f"/proc/self/ns/{kind}").st_ino
    except OSError:
        return None


def nested_pid(pid: int) -> bool:
    """Whether ``pid`` lives in a pid namespace below ours (a container): /proc/PID/status NSpid has more
    than one id. World-readable, unlike /proc/PID/ns."""
    for line in read_text(f"{PROC}/{pid}/status").splitlines():
        if line.startswith("NSpid:"):
            return len(line.split()) > 2
    return False


def is_local_address(address: str) -> bool:
    """Whether an address is one of this host's (binding to it succeeds)."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((address, 0))
        return True
    except OSError:
        return False

"""Where a target server listens: its open sockets in /proc, else its command line and its option files."""

from __future__ import annotations

import os
from dataclasses import dataclass

from . import parse as mp
from . import procnet
from .optionfiles import server_options

_ANY = ("", "*", "0.0.0.0", "::")


@dataclass(frozen=True)
class Listening:
    """A server's own endpoints: unix socket paths as reachable from here, and (address to dial, port).
    ``seen``: read from its open sockets; else only what its command line and option files configure."""

    pid: int
    sockets: tuple[str, ...] = ()
    ports: tuple[tuple[str, int], ...] = ()
    seen: bool = False

    def words(self) -> str:
        """'socket /tmp/a.sock, tcp 127.0.0.1:3307' ("" when none was found)."""
        return ", ".join([f"socket {s}" for s in self.sockets] + [f"tcp {_host(a)}:{p}" for a, p in self.ports])

    def advice(self) -> str:
        """Where this server listens and how to point pmuprof at it, as one clause."""
        user = "with -u / --defaults-file naming a user of that server"
        found = self.words()
        if not found:
            why = "" if self.seen else " (its open files are not readable here: run as root)"
            return f"no socket or port of pid {self.pid} found{why}: pass -S with its socket, {user}"
        verb = "listens on" if self.seen else "is configured for"
        if self.sockets:
            return f"pid {self.pid} {verb} {found}: pass -S {self.sockets[0]}, {user}"
        address, port = self.ports[0]
        return f"pid {self.pid} {verb} {found}: pass -h {address} -P {port}, {user}"


def _host(address: str) -> str:
    return f"[{address}]" if ":" in address else address


def _dial(address: str, port: int) -> tuple[str, int]:
    """Where to connect for a server bound to ``address``: loopback for a wildcard."""
    address = address.split(",")[0].strip()
    if address in _ANY:
        return ("::1" if address == "::" else "127.0.0.1", port)
    return address, port


def reachable(pid: int, path: str) -> str:
    """A socket path of ``pid`` as this process can open it: through /proc/PID/root when the server has its
    own mount namespace (a container) and the path is not here."""
    inside = f"{procnet.PROC}/{pid}/root{path}"
    return path if os.path.exists(path) or not os.path.exists(inside) else inside


def listening(pid: int) -> Listening:
    """``pid``'s endpoints: its listening sockets when its fds can be read (root, or its owner), else the
    --socket / --port / --bind-address of its command line and of the option files that names."""
    sockets: list[str] = []
    ports: list[tuple[str, int]] = []
    try:
        inodes = procnet.socket_inodes(pid)
        seen = True
    except PermissionError:
        inodes, seen = set(), False
    tcp_here = procnet.same_namespace(pid, "net") is not False
    if seen:
        sockets += mp.listening_unix_sockets(procnet.read_text(f"{procnet.PROC}/{pid}/net/unix"), inodes)
        if tcp_here:
            ports += [_dial(a, p) for a, p in procnet.listening_tcp(procnet.tcp_table(pid), inodes)]
    else:
        conf = configured(pid)
        if conf.get("socket"):
            sockets.append(str(conf["socket"]))
        port = str(conf.get("port") or "")
        if tcp_here and port.isdigit() and int(port) > 0:
            ports.append(_dial(str(conf.get("bind_address") or ""), int(port)))
    paths = tuple(dict.fromkeys(reachable(pid, s) for s in sockets if s.startswith("/")))
    return Listening(pid, paths, tuple(dict.fromkeys(ports)), seen)


def configured(pid: int) -> dict[str, str | None]:
    """socket, port, bind_address, datadir, pid_file as ``pid``'s command line sets them, over what the option
    files it names (or the global ones) set; none from files under --no-defaults."""
    args = mp.server_args(procnet.read_text(f"{procnet.PROC}/{pid}/cmdline").split("\0"))
    files: dict[str, str | None] = {}
    relative = any(args.get(k) and not str(args[k]).startswith("/") for k in ("defaults_file", "defaults_extra_file"))
    if "no_defaults" not in args and not relative:  # a relative path was relative to a directory it has left
        root = f"{procnet.PROC}/{pid}/root"
        files = server_options(
            args.get("defaults_file"),
            args.get("defaults_extra_file"),
            args.get("defaults_group_suffix"),
            root if os.access(root, os.R_OK) else "",
        )
    keys = ("socket", "port", "bind_address", "datadir", "pid_file")
    return {k: args.get(k) or files.get(k) for k in keys if args.get(k) or files.get(k)}

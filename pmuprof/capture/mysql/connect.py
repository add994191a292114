"""A connection to the target's server, proven to reach the target process (proof.py); never shows a password."""

from __future__ import annotations

import getpass
import os
from dataclasses import dataclass, field, replace
from typing import Any

import pymysql

from . import discover, proof
from .mydefaults import OptionSources, resolve
from .tls import Tls, must_be_encrypted, pymysql_kwargs, tls_from

DEFAULT_SOCKETS = (
    "/run/mysqld/mysqld.sock",
    "/var/run/mysqld/mysqld.sock",
    "/var/lib/mysql/mysql.sock",
    "/tmp/mysql.sock",
)
_LOOPBACK = ("127.0.0.1", "::1", "localhost")


@dataclass(frozen=True)
class MysqlOptions:
    """How to reach the server. Holds no password: only where to read one from."""

    socket: str | None = None
    host: str | None = None
    port: int | None = None
    user: str | None = None
    password_env: str | None = None  # name of an environment variable holding the password
    defaults_file: str | None = None  # read only this option file, like mysql --defaults-file
    connect_timeout: float = 3.0
    defaults_extra_file: str | None = None  # also this option file, like mysql --defaults-extra-file
    defaults_group_suffix: str | None = None  # also [client<suffix>] ..., like mysql --defaults-group-suffix
    login_path: str | None = None  # a group of ~/.mylogin.cnf (needs MySQL's my_print_defaults)
    no_defaults: bool = False  # read no option file
    tls: Tls = Tls()  # --ssl-mode / --ssl-ca / --ssl-cert / --ssl-key (option files fill the rest)

    @property
    def sources(self) -> OptionSources:
        return OptionSources(
            self.defaults_file, self.defaults_extra_file, self.defaults_group_suffix, self.login_path, self.no_defaults
        )

    @property
    def explicit(self) -> bool:
        return bool(self.socket or self.host or self.port)


@dataclass(frozen=True)
class Endpoint:
    """One place to try: a unix socket path, or a TCP host and port. ``proof``: how the connection made there
    was proven to reach the target (set by connect)."""

    socket: str | None = None
    host: str | None = None
    port: int | None = None
    proof: str = field(default="", compare=False)

    def __str__(self) -> str:
        return f"socket {self.socket}" if self.socket else f"tcp {self.host}:{self.port}"

    @property
    def local(self) -> bool:
        return bool(self.socket) or (self.host or "") in _LOOPBACK


def scrub(text: Any, secrets: list[str], limit: int = 1000) -> str:
    """One line of at most ``limit`` characters with every secret replaced by ***."""
    line = " ".join(str(text).split())
    for secret in secrets:
        if secret:
            line = line.replace(secret, "***")
    return line[:limit]


def endpoints(opts: MysqlOptions, files: dict[str, str | None], own: discover.Listening | None) -> list[Endpoint]:
    """Where to try, in order: the explicit options only; else the target's own sockets and ports, then the
    option files' socket and host, the usual socket paths, the option files' port."""

    def port_of(value: Any) -> int:
        return int(value) if str(value or "").isdigit() else 3306

    if opts.socket:
        return [Endpoint(socket=opts.socket)]
    if opts.host or opts.port:
        return [Endpoint(host=opts.host or "127.0.0.1", port=opts.port or port_of(files.get("port")))]
    out: list[Endpoint] = []
    if own is not None:
        out += [Endpoint(socket=s) for s in own.sockets] + [Endpoint(host=a, port=p) for a, p in own.ports]
    if files.get("socket"):
        out.append(Endpoint(socket=str(files["socket"])))
    if files.get("host") and files["host"] != "localhost":
        out.append(Endpoint(host=str(files["host"]), port=port_of(files.get("port"))))
    out += [Endpoint(socket=s) for s in DEFAULT_SOCKETS if os.path.exists(s)]
    if files.get("port"):
        out.append(Endpoint(host="127.0.0.1", port=port_of(files["port"])))
    return list(dict.fromkeys(out))


def _password(opts: MysqlOptions, files: dict[str, str | None]) -> str | None:
    if opts.password_env:
        return os.environ.get(opts.password_env)
    if files.get("password") is not None:
        return files["password"]
    return os.environ.get("MYSQL_PWD")


def connect(opts: MysqlOptions, pid: int | None = None, read_timeout: float = 30.0) -> tuple[Any, Endpoint, list[str]]:
    """A PyMySQL connection, the endpoint it was made at, and the secrets to scrub. With ``pid``, only a
    connection proven to reach that process (the endpoint's ``proof`` says how); the explicit options are
    the only endpoint when given, and checked all the same. ``read_timeout``: how long one answer may take
    (a longer one closes the connection with an error).

    Raises ConnectionError with one line that holds no password: each endpoint's failure, and for a server
    that answered instead of ``pid`` which one it was and where ``pid`` itself listens.
    """
    files, _how = resolve(opts.sources)
    password = _password(opts, files)
    secrets = [password] if password else []
    user = opts.user or files.get("user") or getpass.getuser()
    own = discover.listening(pid) if pid is not None else None
    tried = endpoints(opts, files, own)
    if not tried:
        raise ConnectionError("no server socket found (give --mysql-socket or --mysql-host)")
    try:
        tls = tls_from(opts.tls, files)
        ssl_args = {over: pymysql_kwargs(tls, over) for over in (False, True)}
    except ValueError as err:
        raise ConnectionError(str(err)) from None
    refused: list[str] = []  # servers that answered instead of pid: said first
    failed: list[str] = []
    for ep in tried:
        try:
            conn = pymysql.connect(
                unix_socket=ep.socket,
                host=ep.host or "localhost",
                port=ep.port or 3306,
                user=user,
                password=password or "",
                connect_timeout=opts.connect_timeout,
                read_timeout=read_timeout,
                write_timeout=read_timeout,
                autocommit=True,
                charset="utf8mb4",
                **ssl_args[bool(ep.socket)],
            )
        except Exception as err:  # noqa: BLE001 - any driver failure means "try the next one"
            failed.append(f"{ep}: {scrub(err, secrets, 300)}")
            continue
        usable, problem, other_server = _check(conn, ep, tls, pid, secrets)
        if usable is not None:
            return conn, usable, secrets
        conn.close()
        (refused if other_server else failed).append(problem)
    hint = [own.advice()] if own is not None and refused else []
    raise ConnectionError(scrub("; ".join(refused + hint + failed), secrets))


def _check(conn: Any, ep: Endpoint, tls: Tls, pid: int | None, secrets: list[str]) -> tuple[Endpoint | None, str, bool]:
    """(the endpoint with its proof, "", False) when the connection may be used; else (None, why not in one
    clause, whether a server answered that is not ``pid``)."""
    try:
        if must_be_encrypted(tls) and not _encrypted(conn):
            return None, f"{ep}: --ssl-mode {tls.mode} but the server did not offer TLS", False
        if pid is None:
            return ep, "", False
        answer = proof.ask(conn)
        sock = getattr(conn, "_sock", None)  # PyMySQL's connected socket (an SSL socket has the same fd)
        link = proof.link_of(sock) if sock is not None else None
        verdict = proof.prove(pid, link, answer, lambda: proof.serving_tid(conn))
    except Exception as err:  # noqa: BLE001 - a server that cannot answer is this endpoint's failure
        return None, f"{ep}: {scrub(err, secrets, 300)}", False
    if verdict.ok:
        return replace(ep, proof=verdict.how), "", False
    if verdict.other:
        said = f"{ep} reached pid {verdict.other} ({answer.words()}), not pid {pid} ({verdict.why})"
    else:
        said = f"{ep} reached a server ({answer.words()}) not proven to be pid {pid}: {verdict.why}"
    return None, scrub(said, secrets, 500), True


def _encrypted(conn: Any) -> bool:
    """The session's cipher, as the server reports it (empty without TLS)."""
    with conn.cursor() as cur:
        cur.execute("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
        row = cur.fetchone()
    return bool(row and row[1])

"""TLS to the server like the mysql client's --ssl-mode / --ssl-ca / --ssl-cert / --ssl-key, as PyMySQL arguments."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from collections.abc import Mapping

MODES = ("DISABLED", "PREFERRED", "REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY")
_TRUE = ("", "1", "on", "true", "yes")


@dataclass(frozen=True)
class Tls:
    """The TLS settings of one connection; ``mode`` None means: the client default (no TLS asked)."""

    mode: str | None = None
    ca: str | None = None
    cert: str | None = None
    key: str | None = None

    def __post_init__(self) -> None:
        if self.mode is not None and self.mode not in MODES:
            raise ValueError(f"--ssl-mode {self.mode!r}: expected one of {', '.join(MODES)}")


def tls_from(cli: Tls, files: Mapping[str, str | None]) -> Tls:
    """Command-line values over option-file values (ssl-mode, ssl-ca, ssl-cert, ssl-key, and MariaDB's
    ssl / skip-ssl / ssl-verify-server-cert spellings)."""
    mode = cli.mode or _file_mode(files)
    ca = cli.ca or files.get("ssl_ca")
    cert = cli.cert or files.get("ssl_cert")
    key = cli.key or files.get("ssl_key")
    if mode is None and ca:  # MySQL: --ssl-ca without --ssl-mode means VERIFY_CA
        mode = "VERIFY_CA"
    elif mode is None and (cert or key):
        mode = "PREFERRED"
    return Tls(mode, ca, cert, key)


def _truthy(files: Mapping[str, str | None], key: str) -> bool | None:
    if key not in files:
        return None
    return str(files[key] if files[key] is not None else "").lower() in _TRUE


def _file_mode(files: Mapping[str, str | None]) -> str | None:
    if files.get("ssl_mode"):
        return str(files["ssl_mode"]).upper()
    if _truthy(files, "skip_ssl") or _truthy(files, "ssl") is False:
        return "DISABLED"
    if _truthy(files, "ssl_verify_server_cert"):
        return "VERIFY_IDENTITY"
    if _truthy(files, "ssl"):
        return "REQUIRED"
    return None


def pymysql_kwargs(tls: Tls, over_socket: bool = False) -> dict[str, Any]:
    """Keyword arguments for pymysql.connect. PyMySQL negotiates TLS when the server offers it;
    ``REQUIRED`` and stricter are enforced after connecting (``must_be_encrypted``). With no mode given,
    a Unix socket connection does not negotiate it, as MySQL's own clients treat a socket: it never
    leaves the host, and on MariaDB 11.4 (TLS on by default, a generated RSA-4096 key) each handshake
    costs the server about 80 ms of CPU, three times a capture."""
    if tls.mode is None or tls.mode == "DISABLED":
        return {"ssl_disabled": True} if tls.mode == "DISABLED" or over_socket else {}
    if tls.mode in ("VERIFY_CA", "VERIFY_IDENTITY") and not tls.ca:
        raise ValueError(f"--ssl-mode {tls.mode} needs --ssl-ca (the CA that signed the server's certificate)")
    out: dict[str, Any] = {
        "ssl_verify_cert": tls.mode in ("VERIFY_CA", "VERIFY_IDENTITY"),
        "ssl_verify_identity": tls.mode == "VERIFY_IDENTITY",
    }
    for name, value in (("ssl_ca", tls.ca), ("ssl_cert", tls.cert), ("ssl_key", tls.key)):
        if value:
            out[name] = value
    return out


def must_be_encrypted(tls: Tls) -> bool:
    return tls.mode in ("REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY")

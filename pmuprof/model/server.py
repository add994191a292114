"""mysql.json as frozen types: the server's version, variables, status, SEMAPHORES, processlist, error log."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar
from collections.abc import Mapping

T = TypeVar("T")
FAMILIES = ("mysql", "percona", "mariadb")  # the server families rules and knowledge tables name
FAMILY_NAMES = {"mysql": "MySQL", "percona": "Percona Server", "mariadb": "MariaDB"}


def server_family(version: str, comment: str = "") -> str | None:
    """'mariadb', 'percona' or 'mysql' from @@version and @@version_comment; None without a version."""
    if not version.strip():
        return None
    text = f"{version} {comment}".lower()
    if "mariadb" in text:
        return "mariadb"
    if "percona" in text:
        return "percona"
    return "mysql"


def family_from_name(name: str) -> str | None:
    """The family a process or binary name tells ('mariadbd', '/usr/sbin/mysqld'), None when it tells none."""
    low = name.lower()
    if "mariadb" in low:
        return "mariadb"
    if "mysqld" in low:
        return "mysql"
    return None


def for_family(by_family: Mapping[str, T], family: str) -> T | None:
    """A family's entry; Percona Server reads MySQL's when it has none of its own."""
    if family in by_family:
        return by_family[family]
    return by_family.get("mysql") if family == "percona" else None


@dataclass(frozen=True)
class ServerVersion:
    version: str = ""
    version_comment: str = ""
    family: str | None = None  # mysql | percona | mariadb
    version_tuple: tuple[int, ...] = ()


@dataclass(frozen=True)
class StatusFacts:
    interval_s: float | None = None
    before: Mapping[str, Any] = field(default_factory=dict)
    after: Mapping[str, Any] = field(default_factory=dict)
    rates: Mapping[str, float] = field(default_factory=dict)  # per second over interval_s

    def get(self, name: str) -> Any:
        for part in (self.rates, self.after, self.before):
            if name in part:
                return part[name]
        return None


@dataclass(frozen=True)
class Processlist:
    threads: int = 0
    states: Mapping[str, int] = field(default_factory=dict)
    commands: Mapping[str, int] = field(default_factory=dict)
    tids: Mapping[str, str] = field(default_factory=dict)  # OS thread id -> state
    thread_names: Mapping[str, str] = field(default_factory=dict)
    own_thread: int | None = None  # the server thread of pmuprof's own facts connection (left out of the above)


@dataclass(frozen=True)
class InnodbData:
    """The InnoDB tablespace files the server lists (all but the temporary one) and their size in bytes."""

    source: str = ""
    tablespaces: int = 0
    bytes: int = 0


@dataclass(frozen=True)
class ServerFacts:
    """What the capture learnt from the server; ``reachable`` false with ``error`` when it could not connect."""

    reachable: bool = False
    error: str | None = None
    source: str = ""
    proof: str = ""  # how the connection was proven to reach ``pid`` (capture/mysql/proof.py); "" in older runs
    pid: int | None = None
    server: ServerVersion = field(default_factory=ServerVersion)
    variables: Mapping[str, str] = field(default_factory=dict)
    status: StatusFacts = field(default_factory=StatusFacts)
    semaphores: Mapping[str, Any] | None = None
    processlist: Processlist | None = None
    error_log: Mapping[str, Any] | None = None
    my_cpu_relax_multiplier: float | None = None
    innodb_data: InnodbData | None = None
    missing: tuple[str, ...] = ()

    def variable(self, name: str) -> str | None:
        if name in self.variables:
            return self.variables[name]
        lowered = name.lower()
        return next((v for k, v in self.variables.items() if k.lower() == lowered), None)

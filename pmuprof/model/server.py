"""mysql.json as frozen types: the server's version, variables, status, SEMAPHORES, processlist, error log."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


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


@dataclass(frozen=True)
class ServerFacts:
    """What the capture learnt from the server; ``reachable`` false with ``error`` when it could not connect."""

    reachable: bool = False
    error: str | None = None
    source: str = ""
    pid: int | None = None
    server: ServerVersion = field(default_factory=ServerVersion)
    variables: Mapping[str, str] = field(default_factory=dict)
    status: StatusFacts = field(default_factory=StatusFacts)
    semaphores: Mapping[str, Any] | None = None
    processlist: Processlist | None = None
    error_log: Mapping[str, Any] | None = None
    my_cpu_relax_multiplier: float | None = None
    missing: tuple[str, ...] = ()

    def variable(self, name: str) -> str | None:
        if name in self.variables:
            return self.variables[name]
        lowered = name.lower()
        return next((v for k, v in self.variables.items() if k.lower() == lowered), None)

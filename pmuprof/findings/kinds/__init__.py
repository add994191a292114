"""The registry of matcher kinds: each kind validates its spec, evaluates it, words its value, documents it.

A new kind is one module here (a ``Kind`` subclass, findings/kinds/base.py) and one line in KINDS.
The order of KINDS is the order of the rule guide's `evidence` row (docs/rules.md).
"""

from __future__ import annotations

from typing import Any

from .base import Env, Kind, SpecCtx
from .counters import Counter, CounterRatio
from .derived import Derived
from .fence import Fence
from .latch import Latch
from .offcpu import OffCpu
from .paths import Analysis, Host, Quality, Run, Target
from .series import Series
from .server import Mysql, ProcesslistState, Status, Variable
from .stack import Stack
from .window import Window

KINDS: dict[str, Kind[Any]] = {
    k.name: k
    for k in (
        Stack(),
        Latch(),
        CounterRatio(),
        Counter(),
        Variable(),
        Status(),
        ProcesslistState(),
        Mysql(),
        Host(),
        Run(),
        Target(),
        Analysis(),
        Quality(),
        Series(),
        Window(),
        Derived(),
        OffCpu(),
        Fence(),
    )
}


def kind_of(name: str) -> Kind[Any]:
    """The kind a rule's evidence names (the schema admits only these names)."""
    return KINDS[name]


def guide() -> str:
    """The kinds as the rule guide lists them: each kind's own words, in registry order."""
    return ", ".join(k.guide for k in KINDS.values() if k.guide)


__all__ = ["KINDS", "Env", "Kind", "SpecCtx", "guide", "kind_of"]

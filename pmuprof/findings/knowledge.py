"""The knowledge tables (rules/knowledge/*.yaml) as frozen types: latches by server version, server features,
the generic frames a verdict walks through.

The files are data checked against server sources (each row says where); they are validated like
rule files (unknown keys and bad ranges are errors with file:line) and loaded once.
"""

from __future__ import annotations

import contextlib
import re
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any
from collections.abc import Iterator, Mapping

from ..errors import RuleError
from ..model.server import FAMILIES, for_family
from ..paths import installed_rules_dir, rules_dir
from .patterns import PatternSet
from .versions import in_range, parse_spec
from .yamlload import LDict, LList, load_yaml

WAIT_KINDS = ("spin", "os_wait", "futex", "kernel_spin", "yield")
MODES = ("S", "X", "SX", "U")


@dataclass(frozen=True)
class Servers:
    """family -> ranges (any of). A family not listed does not have the thing; an unknown server has all."""

    ranges: Mapping[str, tuple[str, ...]]

    def hold(self, family: str | None, version: tuple[int, ...]) -> bool:
        if family is None:
            return True
        specs = for_family(self.ranges, family)
        return specs is not None and any(in_range(version, spec) for spec in specs)


@dataclass(frozen=True)
class WaitFrame:
    patterns: PatternSet
    kind: str
    servers: Servers


@dataclass(frozen=True)
class Machinery:
    patterns: PatternSet
    latch_type: str
    servers: Servers
    mode: str = ""
    latch: str = ""
    leaf_kind: str = ""
    # latch types whose implementation holds this frame's lock as a member (ssux_lock_impl's writer mutex):
    # with no frame of the outer lock between this one and the acquirer, the acquirer's latches of those
    # types are candidates too
    inside: tuple[str, ...] = ()


@dataclass(frozen=True)
class Acquirer:
    patterns: PatternSet
    mode: str = ""
    # why this acquirer's wait is seldom on this latch when it also takes another one the stack cannot tell
    # apart ("" when it is not): such a candidate yields to the others, said in the latch table
    seldom: str = ""


@dataclass(frozen=True)
class LatchMapping:
    servers: Servers
    type: str
    acquirers: tuple[Acquirer, ...]


@dataclass(frozen=True)
class Latch:
    id: str
    name: str
    scope: str
    rule: str | None
    mappings: tuple[LatchMapping, ...]
    ps_name: str = ""
    short: str = ""  # a few words for titles and "A or B" ("page latch"); the name when not given

    @property
    def words(self) -> str:
        return self.short or self.name


@dataclass(frozen=True)
class LatchTable:
    wait_frames: tuple[WaitFrame, ...]
    machinery: tuple[Machinery, ...]
    latches: tuple[Latch, ...]
    wake_frames: tuple[WaitFrame, ...] = ()

    def latch(self, latch_id: str) -> Latch | None:
        return next((lat for lat in self.latches if lat.id == latch_id), None)


@dataclass(frozen=True)
class Feature:
    """A variable, schema/table, statement or status variable and the versions that have it."""

    name: str
    kind: str  # variable | schema | statement | status
    exists: Servers
    dynamic: bool | None = None
    syntax: str = ""
    type: str = ""  # a status variable: counter (read as a rate) or gauge (a level)
    about: str = ""  # what it counts, in one line
    verified: tuple[str, ...] = ()  # where each version was checked
    unverified: str = ""  # what was not
    used_by: tuple[str, ...] = ()  # rule ids


class _Ctx:
    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, line: int, msg: str) -> RuleError:
        return RuleError(f"{self.path}:{line}: {msg}", "fix the knowledge table (see the shape comment at its top)")

    def keys(self, data: Any, allowed: tuple[str, ...], line: int, what: str) -> LDict:
        if not isinstance(data, LDict):
            raise self.fail(line, f"{what} must be a mapping")
        for key in data:
            if key not in allowed:
                raise self.fail(data.line_of(key), f"unknown key '{key}' in {what} (allowed: {', '.join(allowed)})")
        return data

    def servers(self, data: Any, line: int) -> Servers:
        data = self.keys(data, FAMILIES, line, "servers")
        out = {}
        for family, spec in data.items():
            specs = tuple(str(s) for s in spec) if isinstance(spec, list) else (str(spec),)
            for one in specs:
                try:
                    parse_spec(one)
                except ValueError as err:
                    raise self.fail(data.line_of(family), f"bad version range for {family}: {err}") from err
            out[family] = specs
        return Servers(out)

    def patterns(self, value: Any, line: int) -> PatternSet:
        try:
            return PatternSet.of((str(value),))
        except re.error as err:
            raise self.fail(line, f"bad pattern {value!r}: {err}") from err

    def choice(self, data: LDict, key: str, allowed: tuple[str, ...], required: bool = True) -> str:
        value = data.get(key)
        if value is None and not required:
            return ""
        if value not in allowed:
            raise self.fail(data.line_of(key), f"{key} must be one of {', '.join(allowed)}")
        return str(value)


_DOC_KEYS = ("note", "verified", "unverified")


def _wait_frame(ctx: _Ctx, item: Any, line: int) -> WaitFrame:
    d = ctx.keys(item, ("pattern", "kind", "servers") + _DOC_KEYS, line, "a wait frame")
    return WaitFrame(
        ctx.patterns(d["pattern"], d.line_of("pattern")),
        ctx.choice(d, "kind", WAIT_KINDS),
        ctx.servers(d["servers"], d.line_of("servers")),
    )


def _wake_frame(ctx: _Ctx, item: Any, line: int) -> WaitFrame:
    d = ctx.keys(item, ("pattern", "servers") + _DOC_KEYS, line, "a wake frame")
    return WaitFrame(
        ctx.patterns(d["pattern"], d.line_of("pattern")), "wake", ctx.servers(d["servers"], d.line_of("servers"))
    )


def _machinery(ctx: _Ctx, item: Any, line: int) -> Machinery:
    keys = ("pattern", "latch_type", "mode", "latch", "leaf_kind", "inside", "servers") + _DOC_KEYS
    d = ctx.keys(item, keys, line, "a machinery frame")
    inside = d.get("inside") or []
    if not isinstance(inside, list) or not all(isinstance(t, str) and t for t in inside):
        raise ctx.fail(d.line_of("inside"), "inside must be a list of latch types")
    return Machinery(
        ctx.patterns(d["pattern"], d.line_of("pattern")),
        str(d["latch_type"]),
        ctx.servers(d["servers"], d.line_of("servers")),
        ctx.choice(d, "mode", MODES, False),
        str(d.get("latch") or ""),
        ctx.choice(d, "leaf_kind", WAIT_KINDS, False),
        tuple(inside),
    )


def _latch(ctx: _Ctx, item: Any, line: int) -> Latch:
    d = ctx.keys(item, ("id", "name", "short", "ps_name", "scope", "rule", "mappings", "note"), line, "a latch")
    mappings = []
    for m, m_line in zip(d.get("mappings") or LList(), (d.get("mappings") or LList()).item_lines):
        md = ctx.keys(m, ("servers", "type", "impl", "acquirers") + _DOC_KEYS, m_line, "a latch mapping")
        acquirers = []
        for a, a_line in zip(md["acquirers"], md["acquirers"].item_lines):
            ad = ctx.keys(a, ("pattern", "mode", "note", "seldom"), a_line, "an acquirer")
            acquirers.append(
                Acquirer(
                    ctx.patterns(ad["pattern"], a_line),
                    ctx.choice(ad, "mode", MODES, False),
                    str(ad.get("seldom") or ""),
                )
            )
        mappings.append(
            LatchMapping(ctx.servers(md["servers"], md.line_of("servers")), str(md["type"]), tuple(acquirers))
        )
    return Latch(
        str(d["id"]),
        str(d["name"]),
        str(d.get("scope") or ""),
        d.get("rule"),
        tuple(mappings),
        str(d.get("ps_name") or ""),
        str(d.get("short") or ""),
    )


KNOWLEDGE_FILES = {
    "latch_table": "latches.yaml",
    "server_features": "server-features.yaml",
    "generic_frames": "generic-frames.yaml",
}  # loader -> file


# The rules folder being loaded: its knowledge/ is the one its rules are checked against (None: the rules
# in use, PMUPROF_RULES or the installed ones). Set only by rules_folder().
_FOLDER: ContextVar[Path | None] = ContextVar("pmuprof_rules_folder", default=None)


@contextlib.contextmanager
def rules_folder(directory: Path) -> Iterator[None]:
    """Inside: knowledge_dir() is DIRECTORY/knowledge, so a folder's rules are checked against its own tables."""
    token = _FOLDER.set(Path(directory))
    try:
        yield
    finally:
        _FOLDER.reset(token)


def knowledge_dir() -> Path:
    return (_FOLDER.get() or rules_dir()) / "knowledge"


def latch_table(path: Path | None = None) -> LatchTable:
    """rules/knowledge/latches.yaml (of the folder being loaded, else of the rules in use), validated."""
    return _latch_table(path or knowledge_dir() / KNOWLEDGE_FILES["latch_table"])


@lru_cache(maxsize=4)
def _latch_table(path: Path) -> LatchTable:
    ctx, data = _Ctx(path), load_yaml(path)
    top = ctx.keys(data, ("sources", "wait_frames", "wake_frames", "machinery", "latches"), 1, "the latch table")
    waits = tuple(_wait_frame(ctx, w, ln) for w, ln in zip(top["wait_frames"], top["wait_frames"].item_lines))
    wakes = tuple(
        _wake_frame(ctx, w, ln)
        for w, ln in zip(top.get("wake_frames") or (), (top.get("wake_frames") or LList()).item_lines)
    )
    mach = tuple(_machinery(ctx, m, ln) for m, ln in zip(top["machinery"], top["machinery"].item_lines))
    latches = tuple(_latch(ctx, x, ln) for x, ln in zip(top["latches"], top["latches"].item_lines))
    ids = [x.id for x in latches]
    for m in mach:
        if m.latch and m.latch not in ids:
            raise ctx.fail(1, f"machinery names unknown latch '{m.latch}'")
    return LatchTable(waits, mach, latches, wakes)


_FEATURE_KINDS = {"variables": "variable", "schemas": "schema", "statements": "statement", "status_variables": "status"}


def server_features(path: Path | None = None) -> Mapping[str, Feature]:
    """rules/knowledge/server-features.yaml: name -> Feature (statements by their id)."""
    return _server_features(path or knowledge_dir() / KNOWLEDGE_FILES["server_features"])


@lru_cache(maxsize=4)
def _server_features(path: Path) -> Mapping[str, Feature]:
    ctx, data = _Ctx(path), load_yaml(path)
    top = ctx.keys(data, ("sources",) + tuple(_FEATURE_KINDS), 1, "the server-features table")
    out: dict[str, Feature] = {}
    for section, kind in _FEATURE_KINDS.items():
        for name, entry in (top.get(section) or {}).items():
            if not isinstance(entry, LDict) or "exists" not in entry:
                raise ctx.fail(top[section].line_of(name), f"{section}.{name} needs 'exists'")
            dynamic = entry.get("dynamic")
            kind_of_value = str(entry.get("type") or "")
            if kind == "status" and kind_of_value not in ("", "counter", "gauge"):
                raise ctx.fail(entry.line_of("type"), f"{section}.{name}: type is counter or gauge")
            out[name] = Feature(
                name,
                kind,
                ctx.servers(entry["exists"], entry.line_of("exists")),
                dynamic if isinstance(dynamic, bool) else None,
                str(entry.get("syntax") or ""),
                kind_of_value,
                str(entry.get("about") or ""),
                tuple(str(v) for v in entry.get("verified") or ()),
                str(entry.get("unverified") or ""),
                tuple(str(v) for v in entry.get("used_by") or ()),
            )
    return out


@dataclass(frozen=True)
class GenericFrames:
    """Frames a DBA cannot act on (rules/knowledge/generic-frames.yaml): library DSOs and functions, kernel
    entry frames, and the server frames every statement runs."""

    runtime_dsos: PatternSet
    runtime: PatternSet
    kernel_entry: PatternSet
    server: PatternSet


def generic_frames(path: Path | None = None) -> GenericFrames:
    """rules/knowledge/generic-frames.yaml of the rules in use (a rules folder without one: the installed one)."""
    if path is None:
        path = knowledge_dir() / KNOWLEDGE_FILES["generic_frames"]
        if not path.is_file():
            path = installed_rules_dir() / "knowledge" / KNOWLEDGE_FILES["generic_frames"]
    return _generic_frames(path)


@lru_cache(maxsize=4)
def _generic_frames(path: Path) -> GenericFrames:
    ctx, data = _Ctx(path), load_yaml(path)
    keys = ("runtime_dsos", "runtime", "kernel_entry", "server")
    top = ctx.keys(data, keys, 1, "the generic-frames table")
    sets = []
    for key in keys:
        items = top.get(key) or LList()
        if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
            raise ctx.fail(top.line_of(key) if key in top else 1, f"{key} must be a list of patterns")
        try:
            sets.append(PatternSet.of(items))
        except re.error as err:
            raise ctx.fail(top.line_of(key), f"bad pattern in {key}: {err}") from err
    return GenericFrames(*sets)

"""Load YAML into dicts and lists that remember the line each key and item came from."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from collections.abc import Mapping

import yaml

from ..errors import RuleError


class LDict(dict[str, Any]):
    """A mapping from a YAML file with ``line`` (its own) and ``key_lines`` (each key's)."""

    line: int = 0

    def __init__(self) -> None:
        super().__init__()
        self.key_lines: dict[str, int] = {}

    def line_of(self, key: str) -> int:
        return self.key_lines.get(key, self.line)

    @classmethod
    def of(cls, items: Mapping[str, Any], line: int) -> LDict:
        """A mapping built in code, every key reported at ``line``."""
        out = cls()
        out.line = line
        out.update(items)
        return out


class LList(list[Any]):
    """A sequence from a YAML file with ``line`` and ``item_lines``."""

    line: int = 0

    def __init__(self) -> None:
        super().__init__()
        self.item_lines: list[int] = []


def _convert(node: yaml.Node, loader: yaml.SafeLoader, where: str) -> Any:
    line = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out = LDict()
        out.line = line
        for key_node, value_node in node.value:
            key = _convert(key_node, loader, where)
            key_line = key_node.start_mark.line + 1
            if not isinstance(key, str):
                raise RuleError(f"{where}:{key_line}: keys must be strings, got {key!r}", "quote the key")
            if key in out:
                raise RuleError(f"{where}:{key_line}: duplicate key '{key}'", "remove one of them")
            out[key] = _convert(value_node, loader, where)
            out.key_lines[key] = key_line
        return out
    if isinstance(node, yaml.SequenceNode):
        seq = LList()
        seq.line = line
        for item in node.value:
            seq.append(_convert(item, loader, where))
            seq.item_lines.append(item.start_mark.line + 1)
        return seq
    try:
        return loader.construct_object(node, deep=True)
    except (ValueError, OverflowError) as err:  # e.g. an integer of 5000 digits
        raise RuleError(
            f"{where}:{line}: value cannot be read ({str(err).split(':')[0][:80]})",
            "shorten the value or quote it as a string",
        ) from err


MAX_RULE_BYTES = 1 << 20  # a rule file is a page of text; more is not a rule file
MAX_NODES = 20_000  # scalars, mappings and sequences in one file
MAX_DEPTH = 32  # nesting of mappings and sequences
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when PyYAML was built with it: ~10x faster
_OPEN = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_CLOSE = (yaml.MappingEndEvent, yaml.SequenceEndEvent)


def _read(path: Path, where: str) -> str:
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_RULE_BYTES + 1)
    except OSError as err:
        raise RuleError(
            f"{where}: cannot read ({err.strerror or err})", "check the file exists and is readable"
        ) from err
    if len(raw) > MAX_RULE_BYTES:
        raise RuleError(
            f"{where}:1: larger than {MAX_RULE_BYTES >> 10} KiB, not a rule file", "split it or check the path"
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise RuleError(f"{where}:{line}: not UTF-8 text", "save the file as UTF-8") from err


def _check_events(text: str, where: str) -> None:
    """Refuse aliases (a 1 KB file of nested aliases expands to gigabytes, a self-referencing one
    never ends) and cap nesting and size, from the event stream (PyYAML's parser does not recurse)."""
    loader = _Loader(text)
    depth = nodes = 0
    try:
        while loader.check_event():
            event = loader.get_event()
            line = event.start_mark.line + 1
            if isinstance(event, yaml.AliasEvent):
                raise RuleError(
                    f"{where}:{line}: YAML alias *{event.anchor} is not allowed in rule files",
                    "write the value out where it is used",
                )
            depth += isinstance(event, _OPEN) - isinstance(event, _CLOSE)
            nodes += isinstance(event, yaml.NodeEvent)
            if depth > MAX_DEPTH:
                raise RuleError(f"{where}:{line}: nested more than {MAX_DEPTH} levels deep", "flatten the structure")
            if nodes > MAX_NODES:
                raise RuleError(f"{where}:{line}: more than {MAX_NODES} YAML values", "a rule file is much smaller")
    finally:
        loader.dispose()


def load_yaml(path: Path) -> Any:
    """Parse one YAML document with line numbers; syntax errors become RuleError file:line."""
    where = str(path)
    text = _read(path, where)
    loader = _Loader(text)
    try:
        _check_events(text, where)
        node = loader.get_single_node()
        if node is None:
            raise RuleError(f"{where}:1: empty rule file", "write at least id, title, severity and evidence")
        return _convert(node, loader, where)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 if mark else 0
        raise RuleError(f"{where}:{line}: YAML error: {err.problem or err}", "fix the YAML syntax") from err
    except yaml.YAMLError as err:
        raise RuleError(f"{where}: YAML error: {err}", "fix the YAML syntax") from err
    except RecursionError as err:  # not reachable within MAX_DEPTH; kept as the last guard
        raise RuleError(f"{where}: nested too deeply", "flatten the structure") from err
    finally:
        loader.dispose()

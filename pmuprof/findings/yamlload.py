"""Load YAML into dicts and lists that remember the line each key and item came from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..errors import RuleError


class LDict(dict):
    """A mapping from a YAML file with ``line`` (its own) and ``key_lines`` (each key's)."""

    line: int = 0

    def __init__(self) -> None:
        super().__init__()
        self.key_lines: dict[str, int] = {}

    def line_of(self, key: str) -> int:
        return self.key_lines.get(key, self.line)

    @classmethod
    def of(cls, items: dict, line: int) -> "LDict":
        """A mapping built in code, every key reported at ``line``."""
        out = cls()
        out.line = line
        out.update(items)
        return out


class LList(list):
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
    return loader.construct_object(node, deep=True)


def load_yaml(path: Path) -> Any:
    """Parse one YAML document with line numbers; syntax errors become RuleError file:line."""
    where = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise RuleError(f"{where}: cannot read ({err})", "check the file exists and is UTF-8") from err
    loader = yaml.SafeLoader(text)
    try:
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
    finally:
        loader.dispose()

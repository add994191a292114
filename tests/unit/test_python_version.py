"""pyproject's requires-python is true: no module uses grammar or library newer than its minimum."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCES = sorted((REPO / "pmuprof").rglob("*.py")) + [REPO / "setup.py"]

# Library features newer than the oldest Python pmuprof could otherwise claim, as the ast sees them:
# an attribute or an imported name, a keyword of a call. Grammar (match statements, ...) is
# checked by ast.parse(feature_version=...) instead.
NEWER_NAMES = {
    "types.UnionType": (3, 10),
    "types.NoneType": (3, 10),
    "types.EllipsisType": (3, 10),
    "itertools.pairwise": (3, 10),
    "typing.TypeAlias": (3, 10),
    "typing.ParamSpec": (3, 10),
    "typing.TypeGuard": (3, 10),
    "typing.Concatenate": (3, 10),
    "tomllib": (3, 11),
    "typing.Self": (3, 11),
    "typing.LiteralString": (3, 11),
    "typing.NotRequired": (3, 11),
    "datetime.UTC": (3, 11),
    "enum.StrEnum": (3, 11),
    "hashlib.file_digest": (3, 11),
    "asyncio.TaskGroup": (3, 11),
    "contextlib.chdir": (3, 11),
    "itertools.batched": (3, 12),
    "typing.override": (3, 12),
}
NEWER_KEYWORDS = {  # call name -> keyword -> version
    "zip": {"strict": (3, 10)},
    "dataclass": {"slots": (3, 10), "kw_only": (3, 10), "match_args": (3, 10)},
    "field": {"kw_only": (3, 10)},
    "bisect_left": {"key": (3, 10)},
    "bisect_right": {"key": (3, 10)},
    "insort": {"key": (3, 10)},
}
# `X | Y` in a dataclass field's annotation: model/jsontypes.from_json evaluates the contract
# types' hints at run time (typing.get_type_hints), and `int | None` only evaluates from 3.10.
UNION_IN_DATACLASS = (3, 10)


def declared_minimum() -> tuple[int, int]:
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    found = re.search(r'^requires-python\s*=\s*">=\s*(\d+)\.(\d+)"', text, re.M)
    assert found, "pyproject.toml: requires-python is not of the form '>=3.N'"
    return int(found.group(1)), int(found.group(2))


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _is_dataclass(cls: ast.ClassDef) -> bool:
    for deco in cls.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if _dotted(target).split(".")[-1] == "dataclass":
            return True
    return False


def newer_features(tree: ast.AST) -> list[tuple[int, str, tuple[int, int]]]:
    """(line, what, version) for each library feature of the tables above used in a module."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _dotted(node) in NEWER_NAMES:
            found.append((node.lineno, _dotted(node), NEWER_NAMES[_dotted(node)]))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name, NEWER_NAMES[a.name]) for a in node.names if a.name in NEWER_NAMES]
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                if name in NEWER_NAMES:
                    found.append((node.lineno, name, NEWER_NAMES[name]))
        elif isinstance(node, ast.Call):
            keywords = NEWER_KEYWORDS.get(_dotted(node.func).split(".")[-1], {})
            found += [
                (node.lineno, f"{_dotted(node.func)}({k.arg}=)", keywords[k.arg])
                for k in node.keywords
                if k.arg in keywords
            ]
        elif isinstance(node, ast.ClassDef) and _is_dataclass(node):
            unions = [
                item
                for item in node.body
                if isinstance(item, ast.AnnAssign)
                and any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.BitOr) for n in ast.walk(item.annotation))
            ]
            if unions:  # once per class
                what = f"dataclass {node.name}: an `X | Y` field (typing.get_type_hints fails on it before 3.10)"
                found.append((unions[0].lineno, what, UNION_IN_DATACLASS))
    return found


def needed(paths: list[Path]) -> dict[tuple[int, int], list[str]]:
    """The newest version any module needs, with file:line of what needs it."""
    by_version: dict[tuple[int, int], list[str]] = {}
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for line, what, version in newer_features(tree):
            by_version.setdefault(version, []).append(f"{path.relative_to(REPO)}:{line}: {what}")
    return by_version


def test_every_module_parses_at_the_declared_minimum():
    minimum = declared_minimum()
    for path in SOURCES:
        ast.parse(path.read_text(encoding="utf-8"), str(path), feature_version=minimum)


def test_no_library_feature_is_newer_than_the_declared_minimum():
    minimum = declared_minimum()
    newer = {v: where for v, where in needed(SOURCES).items() if v > minimum}
    assert not newer, f"requires-python says >={minimum[0]}.{minimum[1]}, but:\n" + "\n".join(
        f"  needs {v[0]}.{v[1]}: {w}" for v, where in sorted(newer.items()) for w in where
    )


def test_the_declared_minimum_is_what_the_code_needs():
    """Raising requires-python for a reason this check cannot see: add that reason to the tables."""
    assert declared_minimum() == max(needed(SOURCES), default=(3, 8))


def test_this_interpreter_meets_the_declared_minimum():
    assert sys.version_info[:2] >= declared_minimum()


@pytest.mark.parametrize(
    "source, version",
    [
        ("import types\nx = (int, types.UnionType)\n", (3, 10)),
        ("from itertools import pairwise\n", (3, 10)),
        ("for a, b in zip(x, y, strict=True):\n    pass\n", (3, 10)),
        ("@dataclasses.dataclass(frozen=True, slots=True)\nclass A:\n    x: int\n", (3, 10)),
        ("@dataclass(frozen=True)\nclass A:\n    x: int | None = None\n", (3, 10)),
        ("import tomllib\n", (3, 11)),
    ],
)
def test_the_check_sees_a_newer_feature(source, version):
    assert [v for _, _, v in newer_features(ast.parse(source))] == [version]


def test_the_grammar_check_sees_a_match_statement():
    with pytest.raises(SyntaxError):
        ast.parse("match x:\n    case 1:\n        pass\n", feature_version=(3, 9))

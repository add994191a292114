"""Parse JSON into frozen dataclasses by their type hints (one validation for every contract file), and back.

Supported field types: str, int, float, bool, Any, ``X | None``, ``tuple[X, ...]``,
``Mapping[str, X]`` and nested dataclasses. A value of the wrong type raises ``TypeError`` naming
its path (``targets[0].pid: expected an integer``); keys the type does not know are ignored, so a
newer pmuprof's files still load. A missing key takes the field's default (or None when optional).
"""

from __future__ import annotations

import collections.abc
import dataclasses
import types
import typing
from functools import cache
from typing import Any, TypeVar, Union
from collections.abc import Mapping

T = TypeVar("T")
_NONE = type(None)


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def from_json(cls: type[T], data: Any, path: str = "") -> T:
    """Build ``cls`` (a dataclass) from parsed JSON; raise TypeError with the offending path."""
    built: T = _convert(cls, data, path)
    return built


def _convert(tp: Any, value: Any, path: str) -> Any:
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and _NONE in args:
            return None
        inner = [a for a in args if a is not _NONE]
        errors = []
        for arg in inner:
            try:
                return _convert(arg, value, path)
            except TypeError as err:
                errors.append(str(err))
        raise TypeError(errors[0] if len(errors) == 1 else f"{path or 'value'}: unexpected {type(value).__name__}")
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _dataclass(tp, value, path)
    if origin is tuple:
        return _sequence(typing.get_args(tp)[0], value, path)
    if origin in (collections.abc.Mapping, dict) or tp in (dict, Mapping):
        args = typing.get_args(tp)
        return _mapping(args[1] if len(args) == 2 else Any, value, path)
    return _scalar(tp, value, path)


def _dataclass(cls: type, value: Any, path: str) -> Any:
    if not isinstance(value, Mapping):
        raise TypeError(f"{path or 'value'}: expected an object")
    hints = _hints(cls)
    kwargs = {}
    for field in dataclasses.fields(cls):
        if field.name in value:
            kwargs[field.name] = _convert(hints[field.name], value[field.name], _join(path, field.name))
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise TypeError(f"{_join(path, field.name)}: missing")
    return cls(**kwargs)


def _sequence(item: Any, value: Any, path: str) -> tuple[Any, ...]:
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{path or 'value'}: expected a list")
    numbers = _numbers(item, value)
    if numbers is not None:
        return numbers
    return tuple(_convert(item, v, f"{path}[{i}]") for i, v in enumerate(value))


_FLOAT_OR_NONE = float | None


def _numbers(item: Any, value: list[Any] | tuple[Any, ...]) -> tuple[Any, ...] | None:
    """A list of numbers (series values, tens of thousands) checked in one pass, as _scalar would; None when
    it is not one, or one item is wrong (the item-by-item path then names it)."""
    if item is int and all(type(v) is int for v in value):
        return tuple(value)
    if item is float and all(type(v) in (int, float) for v in value):
        return tuple(float(v) for v in value)
    if item == _FLOAT_OR_NONE and all(v is None or type(v) in (int, float) for v in value):
        return tuple(None if v is None else float(v) for v in value)
    return None


def _mapping(item: Any, value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"{path or 'value'}: expected an object")
    return types.MappingProxyType({str(k): _convert(item, v, _join(path, str(k))) for k, v in value.items()})


_SCALARS = {str: "a string", int: "an integer", float: "a number", bool: "true or false"}


def _scalar(tp: Any, value: Any, path: str) -> Any:
    if tp is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if tp is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if tp in (str, bool) and type(value) is tp:
        return value
    raise TypeError(f"{path or 'value'}: expected {_SCALARS.get(tp, tp)}, got {_kind(value)}")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
    }.get(type(value), type(value).__name__)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def to_json(obj: Any) -> Any:
    """Plain JSON data from dataclasses, tuples and mappings (field order kept)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_json(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Mapping):
        return {str(k): to_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_json(v) for v in obj]
    return obj


def dig(data: Any, dotted: str) -> Any:
    """``a.b.0.c`` through dataclasses (attributes), mappings (keys) and sequences (indices); None if absent."""
    cur = data
    for part in dotted.split("."):
        if dataclasses.is_dataclass(cur) and not isinstance(cur, type):
            cur = getattr(cur, part, None)
        elif isinstance(cur, Mapping):
            cur = cur.get(part)
        elif isinstance(cur, (list, tuple)) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            return None
        if cur is None:
            return None
    return cur

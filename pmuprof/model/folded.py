"""Read and write FlameGraph folded stacks with austin-style ``# key: value`` header lines."""

from __future__ import annotations

import re
from pathlib import Path
from typing import IO, Any
from collections.abc import Iterable, Iterator, Mapping

import numpy as np

from .. import outfile
from ..errors import InputError
from .stacks import Stack, Stacks

# flamegraph.pl's own line pattern: a header must never look like a stack line.
_STACK_LINE = re.compile(r"^(.*)\s+?(\d+(?:\.\d*)?)$")
_HEADER_GUARD = " #"
MAX_COUNT = 2**63 - 1  # counts (and their sum) must fit int64: pprof's sample values are int64


def header_line(key: str, value: Any) -> str:
    line = f"# {key}: {value}"
    if _STACK_LINE.match(line):
        line += _HEADER_GUARD
    return line


def sorted_stacks(stacks: Mapping[Stack, int]) -> list[tuple[Stack, int]]:
    """Stacks in a stable order (by frames) so the same input writes the same bytes."""
    return sorted(stacks.items(), key=lambda kv: kv[0])


def write_folded(
    out: IO[str], stacks: Mapping[Stack, int], headers: Mapping[str, Any] | None = None
) -> np.ndarray | None:
    """The folded text, stacks sorted by frames; for a Stacks, returns the line of each row."""
    for key, value in (headers or {}).items():
        out.write(header_line(key, value) + "\n")
    if not isinstance(stacks, Stacks):
        for stack, count in sorted_stacks(stacks):
            out.write(";".join(stack) + f" {count}\n")
        return None
    keys = list(stacks)
    order = sorted(range(len(keys)), key=keys.__getitem__)
    counts = stacks.counts.tolist()
    for i in order:
        out.write(";".join(keys[i]) + f" {counts[i]}\n")
    line = np.empty(len(keys), dtype=np.int64)
    line[np.asarray(order, dtype=np.int64)] = np.arange(len(keys))
    return line


def save_folded(path: Path, stacks: Mapping[Stack, int], headers: Mapping[str, Any] | None = None) -> np.ndarray | None:
    """write_folded into ``path``, atomically (a cut-short write never leaves a partial stacks.folded)."""
    with outfile.open_text(path) as out:
        return write_folded(out, stacks, headers)


def parse_header(line: str) -> dict[str, str]:
    """``# key: value`` -> {key: value} ({} for a comment without a colon)."""
    key, sep, value = line[1:].partition(":")
    if not sep:
        return {}
    value = value.strip()
    if value.endswith(_HEADER_GUARD.strip()) and line.endswith(_HEADER_GUARD):
        value = value[: -len(_HEADER_GUARD.strip())].rstrip()
    return {key.strip(): value}


def leading_headers(path: Path) -> dict[str, str]:
    """The ``# key: value`` lines before the first stack line (where pmuprof and austin write them)."""
    headers: dict[str, str] = {}
    for line in iter_lines(path):
        line = line.rstrip("\r\n")
        if line.startswith("#"):
            headers.update(parse_header(line))
        elif line.strip():
            break
    return headers


def bad_line(name: str, lineno: int, why: str) -> InputError:
    """The one error a folded file's bad line gives, wherever it was parsed."""
    if "2^63" in why:
        return InputError(f"{name}:{lineno}: the counts add up to more than 2^63-1", "check the file's counts")
    return InputError(
        f"{name}:{lineno}: not a folded stack line ('frame;frame;leaf COUNT')",
        "check the file is stackcollapse/pmuprof folded output and was not truncated",
    )


def parse_folded(lines: Iterable[str], name: str = "<folded>") -> tuple[dict[Stack, int], dict[str, str]]:
    """Parse folded lines into (stacks, headers). Bad lines raise InputError with the line number."""
    stacks: dict[Stack, int] = {}
    headers: dict[str, str] = {}
    total = 0
    for lineno, raw in enumerate(lines, 1):
        line = raw.rstrip("\r\n")
        if not line.strip():
            continue
        if line.startswith("#"):
            headers.update(parse_header(line))
            continue
        frames, _, count = line.rpartition(" ")
        if not frames or not (count.isascii() and count.isdigit()):
            raise bad_line(name, lineno, "not a folded stack line")
        total += int(count) if len(count) <= 19 else MAX_COUNT + 1
        if total > MAX_COUNT:  # pprof and most readers keep counts in int64
            raise bad_line(name, lineno, "counts over 2^63-1")
        stack = tuple(frames.split(";"))
        stacks[stack] = stacks.get(stack, 0) + int(count)
    return stacks, headers


def load_folded(path: Path) -> tuple[dict[Stack, int], dict[str, str]]:
    with open(path, encoding="utf-8", errors="backslashreplace") as fh:
        return parse_folded(fh, str(path))


def iter_lines(path: Path) -> Iterator[str]:
    with open(path, encoding="utf-8", errors="backslashreplace") as fh:
        yield from fh

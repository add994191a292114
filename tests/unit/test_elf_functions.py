"""ElfFile.function_extents (symbol_summary's bulk read of a symbol table) against the one-by-one reading, and a
table that runs past the file's end: an error in the summary, never an exception."""

from __future__ import annotations

import shutil
import struct
import sys
from pathlib import Path

import pytest

from pmuprof.tools.elf import ElfFile, symbol_summary

BINARIES = [Path(sys.executable).resolve(), Path("/lib/x86_64-linux-gnu/libc.so.6")]


@pytest.mark.parametrize("path", [p for p in BINARIES if p.is_file()], ids=lambda p: p.name)
@pytest.mark.parametrize("table", [".dynsym", ".symtab"])
def test_the_bulk_read_gives_what_the_one_by_one_reading_gives(path: Path, table: str) -> None:
    elf = ElfFile(path)
    one_by_one = [(s.value, s.size) for s in elf.symbols(table) if s.is_func]
    bulk = elf.function_extents(table)
    assert [(int(v), int(s)) for v, s in bulk.tolist()] == one_by_one
    assert table == ".symtab" or one_by_one  # a real table was read (libc's: over 2,000 functions)


def _section_header(data: bytes, name: str) -> int:
    """The file offset of section ``name``'s header (ELF64, little-endian)."""
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    (names_at,) = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 24)
    for i in range(shnum):
        at = shoff + i * shentsize
        (name_off,) = struct.unpack_from("<I", data, at)
        end = data.index(b"\0", names_at + name_off)
        if data[names_at + name_off : end].decode() == name:
            return at
    raise LookupError(name)


def test_a_table_past_the_end_of_the_file_is_an_error_in_the_summary(tmp_path: Path) -> None:
    damaged = tmp_path / "damaged"
    shutil.copyfile(BINARIES[0], damaged)
    data = bytearray(damaged.read_bytes())
    header = _section_header(bytes(data), ".dynsym")
    struct.pack_into("<Q", data, header + 32, len(data) * 2)  # sh_size: twice the file
    damaged.write_bytes(bytes(data))
    summary = symbol_summary(damaged)
    assert "past the end" in summary["error"], summary

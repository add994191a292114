"""Find a data symbol in an ELF file and read its value, read-only, from a live process."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ...tools.elf import ElfFile

ET_DYN = 3


@dataclass(frozen=True)
class ElfSymbol:
    """A symbol's link-time address and size, plus what is needed to relocate it."""

    name: str
    value: int
    size: int
    section: str  # ".dynsym" or ".symtab"
    pie: bool  # ET_DYN: add the load base
    first_load_vaddr: int  # lowest PT_LOAD p_vaddr, page-aligned


def find_symbol_in_file(path: str | Path, name: str) -> ElfSymbol | None:
    """Look ``name`` up in .dynsym, then .symtab (one ELF reader for the project: elfinfo)."""
    elf = ElfFile(Path(path))
    found = elf.find(name)
    if found is None:
        return None
    sym, table = found
    return ElfSymbol(name, sym.value, sym.size, table, elf.e_type == ET_DYN, elf.first_load_vaddr())


def load_base(maps_text: str, inode: int, first_load_vaddr: int) -> int | None:
    """The PIE load bias from /proc/PID/maps: where file offset 0 of ``inode`` is mapped, minus its vaddr."""
    for line in maps_text.splitlines():
        parts = line.split(None, 5)
        if len(parts) >= 5 and parts[4].isdigit() and int(parts[4]) == inode and int(parts[2], 16) == 0:
            return int(parts[0].split("-")[0], 16) - first_load_vaddr
    return None


def read_process_symbol(pid: int, name: str, size: int = 4) -> int:
    """Read the unsigned integer ``name`` from the memory of ``pid`` (needs ptrace rights; read-only).

    Raises OSError or LookupError with a one-line reason.
    """
    exe = Path(f"/proc/{pid}/exe")
    sym = find_symbol_in_file(exe, name)
    if sym is None:
        raise LookupError(f"{name} is not in the symbol tables of {os.readlink(exe)}")
    inode = os.stat(exe).st_ino
    base = 0
    if sym.pie:
        maps = Path(f"/proc/{pid}/maps").read_text(encoding="utf-8", errors="replace")
        found = load_base(maps, inode, sym.first_load_vaddr)
        if found is None:
            raise LookupError(f"the executable of pid {pid} is not in /proc/{pid}/maps")
        base = found
    width = sym.size if sym.size in (1, 2, 4, 8) else size
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        mem.seek(base + sym.value)
        data = mem.read(width)
    if len(data) != width:
        raise OSError(f"short read of {name} from /proc/{pid}/mem")
    return int.from_bytes(data, "little")

"""Find a data symbol in an ELF file and read its value, read-only, from a live process."""

from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass
from pathlib import Path

SHT_SYMTAB, SHT_DYNSYM, PT_LOAD, ET_DYN = 2, 11, 1, 3


@dataclass(frozen=True)
class ElfSymbol:
    """A symbol's link-time address and size, plus what is needed to relocate it."""

    name: str
    value: int
    size: int
    section: str  # ".dynsym" or ".symtab"
    pie: bool  # ET_DYN: add the load base
    first_load_vaddr: int  # lowest PT_LOAD p_vaddr, page-aligned


def _header(buf: bytes | mmap.mmap) -> tuple[str, dict[str, int]]:
    if buf[:4] != b"\x7fELF" or buf[4] != 2:
        raise ValueError("not a 64-bit ELF file")
    end = "<" if buf[5] == 1 else ">"
    (e_type, _m, _v, _entry, phoff, shoff, _f, _eh, phentsize, phnum, shentsize, shnum, shstrndx) = struct.unpack_from(
        end + "HHIQQQIHHHHHH", buf, 16)
    return end, {"type": e_type, "phoff": phoff, "shoff": shoff, "phentsize": phentsize,
                 "phnum": phnum, "shentsize": shentsize, "shnum": shnum, "shstrndx": shstrndx}


def _sections(buf: bytes | mmap.mmap, end: str, hdr: dict[str, int]) -> list[tuple[int, int, int, int, int, int]]:
    """(name_off, type, offset, size, link, entsize) for each section header."""
    out = []
    for i in range(hdr["shnum"]):
        base = hdr["shoff"] + i * hdr["shentsize"]
        name, stype, _flags, _addr, off, size, link, _info, _align, entsize = struct.unpack_from(
            end + "IIQQQQIIQQ", buf, base)
        out.append((name, stype, off, size, link, entsize))
    return out


def _cstr(buf: bytes | mmap.mmap, at: int) -> bytes:
    stop = buf.find(b"\0", at)
    return bytes(buf[at:stop if stop >= 0 else len(buf)])


def _first_load(buf: bytes | mmap.mmap, end: str, hdr: dict[str, int]) -> int:
    vaddrs = []
    for i in range(hdr["phnum"]):
        p_type, _flags, _off, vaddr = struct.unpack_from(end + "IIQQ", buf, hdr["phoff"] + i * hdr["phentsize"])
        if p_type == PT_LOAD:
            vaddrs.append(vaddr)
    return (min(vaddrs) & ~0xFFF) if vaddrs else 0


def find_symbol(buf: bytes | mmap.mmap, name: str) -> ElfSymbol | None:
    """Look ``name`` up in .dynsym, then .symtab, of an ELF64 image held in ``buf``."""
    end, hdr = _header(buf)
    sections = _sections(buf, end, hdr)
    want = name.encode()
    for kind, label in ((SHT_DYNSYM, ".dynsym"), (SHT_SYMTAB, ".symtab")):
        for _n, stype, off, size, link, entsize in sections:
            if stype != kind or not entsize or link >= len(sections):
                continue
            strtab = sections[link][2]
            for at in range(off, off + size - entsize + 1, entsize):
                st_name, _info, _other, shndx, value, st_size = struct.unpack_from(end + "IBBHQQ", buf, at)
                if shndx and value and _cstr(buf, strtab + st_name) == want:
                    return ElfSymbol(name, value, st_size, label, hdr["type"] == ET_DYN,
                                     _first_load(buf, end, hdr))
    return None


def find_symbol_in_file(path: str | Path, name: str) -> ElfSymbol | None:
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        return find_symbol(buf, name)


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

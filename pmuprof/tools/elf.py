"""Read-only ELF facts from a binary: build-id, symbol tables, debug info, frame-pointer prologues."""

from __future__ import annotations

import mmap
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Iterator

import numpy as np

from ..arch import FRAME_POINTER_PROLOGUES, elf_machine_name
from ..infile import ELF_MAX_BYTES, Refused, opened


def note_build_id(data: bytes | mmap.mmap, pos: int = 0, end: int | None = None) -> str | None:
    """The GNU build-id in ELF notes (a SHT_NOTE section, or /sys/kernel/notes: the running kernel's)."""
    end = len(data) if end is None else min(end, len(data))
    while pos + 12 <= end:
        namesz, descsz, ntype = struct.unpack_from("<III", data, pos)
        name_at = pos + 12
        desc_at = name_at + ((namesz + 3) & ~3)
        if ntype == 3 and data[name_at : name_at + 3] == b"GNU":
            return data[desc_at : desc_at + descsz].hex() or None
        pos = desc_at + ((descsz + 3) & ~3)
    return None


def running_kernel_build_id(notes: str = "/sys/kernel/notes") -> str | None:
    """This host's running kernel's build-id (None when /sys/kernel/notes cannot be read)."""
    try:
        with open(notes, "rb") as fh:
            return note_build_id(fh.read(65536))
    except OSError:
        return None


@dataclass(frozen=True)
class Section:
    name: str
    type: int
    addr: int
    offset: int
    size: int
    link: int
    entsize: int


@dataclass(frozen=True)
class Symbol:
    name: str
    value: int
    size: int
    is_func: bool


_ELF64_SYM = np.dtype(
    [("name", "<u4"), ("info", "u1"), ("other", "u1"), ("shndx", "<u2"), ("value", "<u8"), ("size", "<u8")]
)
_EXTENT = np.dtype([("value", "<u8"), ("size", "<u8")])

_MARIADB_VERSION = re.compile(rb"(?<![0-9.])(\d{1,2}\.\d{1,2}\.\d{1,3})-MariaDB\0")


class ElfFile:
    """A minimal 64-bit little-endian ELF reader (enough for x86-64 mysqld/mariadbd), over an mmap.
    Paths come from recordings and other users' files: opened through infile (a FIFO or device named
    there raises infile.Refused, an OSError, instead of blocking)."""

    def __init__(self, path: Path, data: bytes | None = None) -> None:
        """The file at ``path``, or ``data`` already in memory (then ``path`` only names it)."""
        self.path = Path(path)
        self.data: bytes | mmap.mmap
        if data is None:
            with opened(self.path, ELF_MAX_BYTES) as fh:
                self.data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        else:
            self.data = data
        if self.data[:4] != b"\x7fELF" or self.data[4] != 2 or self.data[5] != 1:
            raise ValueError(f"{path}: not a 64-bit little-endian ELF file")
        self.e_type, self.machine = struct.unpack_from("<HH", self.data, 16)
        (shoff,) = struct.unpack_from("<Q", self.data, 40)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", self.data, 58)
        raw = [struct.unpack_from("<IIQQQQIIQQ", self.data, shoff + i * shentsize) for i in range(shnum)]
        names_off = raw[shstrndx][4] if shnum else 0
        self.sections = [Section(self._cstr(names_off + r[0]), r[1], r[3], r[4], r[5], r[6], r[9]) for r in raw]

    def _cstr(self, offset: int) -> str:
        end = self.data.find(b"\0", offset)
        return self.data[offset:end].decode("utf-8", "backslashreplace")

    def section(self, name: str) -> Section | None:
        return next((s for s in self.sections if s.name == name), None)

    def has_symtab(self) -> bool:
        """A .symtab with function symbols in it (not stripped): read up to the first one, not the whole table."""
        return any(s.is_func for s in self.iter_symbols(".symtab"))

    def debuglink(self) -> str | None:
        """The separate debug file's name from .gnu_debuglink, if any."""
        sec = self.section(".gnu_debuglink")
        if sec is None or sec.type == 8:  # SHT_NOBITS
            return None
        end = self.data.find(b"\0", sec.offset, sec.offset + sec.size)
        name = self.data[sec.offset : end if end >= 0 else sec.offset + sec.size]
        return name.decode("utf-8", "backslashreplace") or None

    def build_id(self) -> str | None:
        notes = (note_build_id(self.data, s.offset, s.offset + s.size) for s in self.sections if s.type == 7)
        return next((bid for bid in notes if bid), None)  # SHT_NOTE sections

    def symbols(self, table: str) -> list[Symbol]:
        return list(self.iter_symbols(table))

    def iter_symbols(self, table: str) -> Iterator[Symbol]:
        """The named, defined symbols of ``table`` in file order."""
        sec = self.section(table)
        if sec is None or not sec.entsize:
            return
        strtab = self.sections[sec.link]
        for i in range(sec.size // sec.entsize):
            name, info, _, shndx, value, size = struct.unpack_from("<IBBHQQ", self.data, sec.offset + i * sec.entsize)
            if name and shndx:
                yield Symbol(self._cstr(strtab.offset + name), value, size, (info & 0xF) == 2)

    def function_extents(self, table: str) -> np.ndarray:
        """(value, size) of the named, defined function symbols of ``table`` in file order, read as one array:
        a server's 100,000 symbols cost no Symbol (nor name) each. A table whose entries are not ELF64's
        24 bytes is read one by one."""
        sec = self.section(table)
        if sec is None or not sec.entsize:
            return np.zeros(0, _EXTENT)
        if sec.entsize != _ELF64_SYM.itemsize:
            return np.array([(s.value, s.size) for s in self.iter_symbols(table) if s.is_func], _EXTENT)
        count = sec.size // sec.entsize
        if sec.offset + count * sec.entsize > len(self.data):
            raise ValueError(f"{table} runs past the end of the file")
        rows = np.frombuffer(self.data, _ELF64_SYM, count, sec.offset)
        keep = (rows["name"] != 0) & (rows["shndx"] != 0) & ((rows["info"] & 0xF) == 2)  # STT_FUNC
        out = np.empty(int(keep.sum()), _EXTENT)
        out["value"], out["size"] = rows["value"][keep], rows["size"][keep]
        del rows  # the view of the mapping goes before the file may be closed
        return out

    def first_load_vaddr(self) -> int:
        """Lowest PT_LOAD p_vaddr, page-aligned (the PIE load bias is measured against it)."""
        (phoff,) = struct.unpack_from("<Q", self.data, 32)
        phentsize, phnum = struct.unpack_from("<HH", self.data, 54)
        vaddrs = [struct.unpack_from("<IIQQ", self.data, phoff + i * phentsize) for i in range(phnum)]
        loads = [v[3] for v in vaddrs if v[0] == 1]  # PT_LOAD
        return (min(loads) & ~0xFFF) if loads else 0

    def find(self, name: str, tables: tuple[str, ...] = (".dynsym", ".symtab")) -> tuple[Symbol, str] | None:
        """The first defined symbol called ``name`` and the table it came from."""
        for table in tables:
            for sym in self.symbols(table):
                if sym.name == name and sym.value:
                    return sym, table
        return None

    def server_version(self) -> str | None:
        """The MariaDB version compiled into a server binary (".rodata" holds "11.4.5-MariaDB"), else None.

        MySQL's binaries carry their version only inside longer strings: not read here (say unknown)."""
        sec = self.section(".rodata")
        if sec is None or sec.type == 8:  # SHT_NOBITS: a separate debug file
            return None
        found = _MARIADB_VERSION.search(self.data, sec.offset, min(sec.offset + sec.size, len(self.data)))
        return found.group(1).decode("ascii") + "-MariaDB" if found else None

    def vaddr_bytes(self, vaddr: int, length: int) -> bytes:
        for sec in self.sections:
            if sec.type == 1 and sec.addr <= vaddr < sec.addr + sec.size:  # SHT_PROGBITS
                start = sec.offset + vaddr - sec.addr
                return self.data[start : start + length]
        return b""


@dataclass(frozen=True)
class Ident:
    """What identifies a binary and whether it can name its own functions."""

    build_id: str | None
    symtab: bool
    debuglink: str | None
    server_version: str | None = None  # "11.4.5-MariaDB" from a server binary's .rodata


def ident(path: Path, refused: list[str] | None = None) -> Ident | None:
    """Build-id, .symtab presence and debuglink of an ELF file; None when it is missing or not ELF (or not
    read at all: a FIFO, a device, another user's link; then why is appended to ``refused``)."""
    try:
        elf = ElfFile(path)
        return Ident(elf.build_id(), elf.has_symtab(), elf.debuglink(), elf.server_version())
    except Refused as err:
        if refused is not None:
            refused.append(str(err))
        return None
    except (OSError, ValueError, IndexError, struct.error):
        return None


def symbol_summary(path: Path) -> dict:
    """Which symbol sources a binary has, and whether its functions keep frame pointers; ``{"error": ...}`` for a
    binary that cannot be read (a damaged one too: its tables are untrusted input)."""
    try:
        elf = ElfFile(path)
        symtab, dynsym = elf.function_extents(".symtab"), elf.function_extents(".dynsym")
        funcs = symtab if len(symtab) else dynsym
        sample = funcs["value"][np.argsort(~funcs["size"], kind="stable")[:400]]  # the largest; ties in file order
        prologues = [elf.vaddr_bytes(value, 8) for value in sample.tolist()]
    except (OSError, ValueError, IndexError, struct.error) as err:
        return {"error": str(err)}
    with_fp = sum(1 for code in prologues if code.startswith(FRAME_POINTER_PROLOGUES))
    ratio = with_fp / len(sample) if len(sample) else 0.0
    return {
        "build_id": elf.build_id(),
        "machine": elf_machine_name(elf.machine),
        "symtab": len(symtab),
        "dynsym": len(dynsym),
        "debuginfo": elf.section(".debug_info") is not None,
        "gnu_debuglink": elf.section(".gnu_debuglink") is not None,
        "eh_frame": elf.section(".eh_frame") is not None,
        "frame_pointer_ratio": round(ratio, 3),
        "frame_pointers": "likely" if ratio >= 0.5 else ("partial" if ratio >= 0.1 else "absent"),
    }

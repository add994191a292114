"""This boot's vdso: the kernel's small shared object every 64-bit process maps ([vdso] in perf's DSO list).

A recording names its vdso frames from the vdso of the boot it was made on; read elsewhere (another host,
a kernel upgrade later) those frames stay unnamed unless the image travelled with it."""

from __future__ import annotations

import struct
from pathlib import Path

from . import elf

NAME = "[vdso]"  # as perf names it; perf --symfs looks for the image at <symfs>/[vdso]
MAX_VDSO = 1 << 20  # a vdso is two pages or so; a larger [vdso] mapping is not copied


def image() -> bytes | None:
    """This process's [vdso] mapping (None when it has none or it cannot be read)."""
    try:
        with open("/proc/self/maps", "rb") as maps:
            line = next((ln for ln in maps if ln.rstrip().endswith(NAME.encode())), None)
        if line is None:
            return None
        lo, hi = (int(x, 16) for x in line.split(None, 1)[0].split(b"-"))
        if not 0 < hi - lo <= MAX_VDSO:
            return None
        with open("/proc/self/mem", "rb", buffering=0) as mem:
            mem.seek(lo)
            data = mem.read(hi - lo)
    except (OSError, ValueError):
        return None
    return data if data.startswith(b"\x7fELF") else None


def build_id(data: bytes | None = None) -> str | None:
    """The build-id of ``data`` (default: this boot's vdso)."""
    data = image() if data is None else data
    if not data:
        return None
    try:
        return elf.ElfFile(Path(NAME), data).build_id()
    except (ValueError, IndexError, struct.error):
        return None

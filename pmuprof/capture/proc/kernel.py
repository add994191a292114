"""Keep the recording boot's kernel text symbols in the run directory (what `perf archive` bundles for it)."""

from __future__ import annotations

import gzip
import io
import os
from pathlib import Path

from ... import outfile
from ...errors import PmuprofError
from ...model.run import KernelSymbols
from ...tools import elf

KALLSYMS = "/proc/kallsyms"
TEXT_TYPES = frozenset("tTwW")  # functions (and weak ones): what stack frames can be in
MAX_READ = 64 * 2**20  # a kallsyms larger than this is not read (a distro kernel's is 10-20 MiB with modules)


def text_lines(raw: bytes) -> tuple[bytes, int] | None:
    """kallsyms lines of text symbols ("addr type name[\\t[module]]") and how many; None when every
    address reads 0 (kptr_restrict, or not root: such a copy would name nothing)."""
    kept, seen_address = [], False
    for line in raw.splitlines(keepends=True):
        parts = line.split(None, 2)
        if len(parts) < 3 or len(parts[1]) != 1 or chr(parts[1][0]) not in TEXT_TYPES:
            continue
        seen_address = seen_address or parts[0].strip(b"0") != b""
        kept.append(line)
    return (b"".join(kept), len(kept)) if seen_address else None


def keep_kernel_symbols(out: Path, kallsyms: str = KALLSYMS, notes: str = "/sys/kernel/notes") -> KernelSymbols:
    """Write ``out`` (gzip'd text symbols of the running kernel) and say what it holds, or why it was not kept."""
    build_id = elf.running_kernel_build_id(notes) or ""
    release = os.uname().release
    if not build_id:
        return KernelSymbols(release=release, why_not=f"{notes} has no build-id: perf cannot match a copy to it")
    try:
        with open(kallsyms, "rb") as fh:
            raw = fh.read(MAX_READ + 1)
    except OSError as err:
        return KernelSymbols(build_id=build_id, release=release, why_not=f"{kallsyms}: {err.strerror}")
    text = text_lines(raw) if len(raw) <= MAX_READ else None
    if text is None:
        why = (
            f"{kallsyms} is larger than {MAX_READ >> 20} MiB"
            if len(raw) > MAX_READ
            else f"{kallsyms} shows no addresses to this user (kernel.kptr_restrict, or not root)"
        )
        return KernelSymbols(build_id=build_id, release=release, why_not=why)
    data, count = text
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", compresslevel=1, mtime=0) as gz:
        gz.write(data)
    try:
        outfile.write_bytes(out, buf.getvalue())
    except PmuprofError as err:  # out of disk: the capture itself is kept
        return KernelSymbols(build_id=build_id, release=release, why_not=str(err))
    return KernelSymbols(file=out.name, build_id=build_id, release=release, symbols=count, bytes=len(buf.getvalue()))

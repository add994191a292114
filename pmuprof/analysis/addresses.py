"""Load biases of the profiled binaries (ELF address → the address it ran at), from run.json's maps."""

from __future__ import annotations

import struct
from pathlib import Path
from collections.abc import Iterable

from ..model.analysis import Binary
from ..model.run import FileMap
from ..tools.elf import ElfFile

_PT_LOAD = 1


def load_segments(elf: ElfFile) -> list[tuple[int, int, int]]:
    """(p_offset, p_vaddr, p_filesz) of each PT_LOAD program header (64-bit little-endian ELF)."""
    (phoff,) = struct.unpack_from("<Q", elf.data, 32)
    phentsize, phnum = struct.unpack_from("<HH", elf.data, 54)
    out = []
    for i in range(phnum):
        p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz = struct.unpack_from(
            "<IIQQQQ", elf.data, phoff + i * phentsize
        )
        if p_type == _PT_LOAD:
            out.append((p_offset, p_vaddr, p_filesz))
    return out


def bias_for(segments: Iterable[tuple[int, int, int]], mapping: FileMap) -> int | None:
    """runtime address - ELF address for the segment holding the mapping's file offset, else None.
    A vaddr v of that segment ran at mapping.start - mapping.pgoff + (v - p_vaddr + p_offset)."""
    for p_offset, p_vaddr, p_filesz in segments:
        if p_offset <= mapping.pgoff < p_offset + max(p_filesz, 1):
            return mapping.start - mapping.pgoff - p_vaddr + p_offset
    return None


def load_biases(binaries: Iterable[Binary], maps: Iterable[FileMap]) -> dict[str, int]:
    """Binary path → load bias, for binaries the analysis found (not ones with another build-id) whose
    executable mapping the capture recorded. A bare perf.data has no maps: no biases."""
    lowest: dict[str, FileMap] = {}
    for fm in maps:
        if fm.path not in lowest or fm.start < lowest[fm.path].start:
            lowest[fm.path] = fm
    out: dict[str, int] = {}
    for binary in binaries:
        mapped = lowest.get(binary.path)
        if mapped is None or not binary.file or binary.verified is False:
            continue
        try:
            bias = bias_for(load_segments(ElfFile(Path(binary.file))), mapped)
        except (OSError, ValueError, struct.error):
            continue
        if bias is not None:
            out[binary.path] = bias
    return out

"""Give freed large arrays back to the system at once (glibc), so a report's peak memory is what is live."""

from __future__ import annotations

import ctypes
import ctypes.util

M_MMAP_THRESHOLD = -3
THRESHOLD = 1 << 24


def release_large_blocks() -> bool:
    """Fix glibc's mmap threshold at 16 MiB: blocks at least that large are mapped and unmapped on free.

    Left dynamic (the default), the threshold climbs after the first large free and later arrays come
    from the heap, which is not shrunk: on a 1,000,000-stack report that kept ~100 MB of freed arrays
    resident. At 1 MiB every mid-sized array was a fresh mapping whose pages the kernel faults in again:
    a third of the report's CPU went to the system (2.9 s of 11.8 s on that file); at 16 MiB 1.5 s of
    9.0 s, for 14 MB more peak. Returns False where there is no glibc (nothing changes there).
    """
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        return bool(libc and libc.mallopt(M_MMAP_THRESHOLD, THRESHOLD))
    except (OSError, AttributeError):
        return False

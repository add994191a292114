"""Give freed large arrays back to the system at once (glibc), so a report's peak memory is what is live."""

from __future__ import annotations

import ctypes
import ctypes.util

M_MMAP_THRESHOLD = -3
THRESHOLD = 1 << 20


def release_large_blocks() -> bool:
    """Fix glibc's mmap threshold at 1 MiB: blocks at least that large are mapped and unmapped on free.

    Left dynamic (the default), the threshold climbs after the first large free and later arrays come
    from the heap, which is not shrunk: on a 1,000,000-stack report that kept ~100 MB of freed arrays
    resident. At 16 MiB (until issue 34) the arrays of 1 to 16 MiB that each stage makes a block at a time
    came from the heap as well, and fragments of it stayed resident: the Python side of a 2.71 M-sample
    reference report peaked at 305 MiB (320 MB), at 1 MiB at 281-282 MiB, level with its perf.data reader's. The
    price: each such array is a fresh mapping whose pages the kernel faults in again, 2 s more system time
    on that 13 s report (benchmarks/RESULTS.md, "Memory bounded").
    Returns False where there is no glibc (nothing changes there).
    """
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        return bool(libc and libc.mallopt(M_MMAP_THRESHOLD, THRESHOLD))
    except (OSError, AttributeError):
        return False

"""Make a perf.data with over-long KSYMBOL records readable by perf 6.1, in place.

    python3 benchmarks/fix_ksymbol.py PERF.DATA

Seen on kernel 6.18 while other tools loaded and unloaded BPF programs during a system-wide
recording (`perf record --no-bpf-event` still asks for KSYMBOL records): some KSYMBOL records carry
32 bytes after their sample_id trailer. perf 6.1 reads the trailer from the record's end, gets a
bad cpu/id and stops ("failed to process type: 17 [Bad address]"). pmuprof-perfdata reads such
records as they are (it takes a KSYMBOL's trailer from where its name ends); this repair is for the
perf script side of a benchmark. This moves each such record's trailer to its end (the name's zero padding grows),
leaving sizes and offsets alone, and prints how many records it changed.
"""

from __future__ import annotations

import mmap
import struct
import sys

KSYMBOL = 17
SAMPLE_ID = 32  # tid/pid, time, id, cpu: the trailer the 11.4.5 benchmark recordings carry


def fix(path: str) -> int:
    with open(path, "r+b") as f, mmap.mmap(f.fileno(), 0) as m:
        off, size = struct.unpack_from("<QQ", m, 40)  # the header's data section
        end, fixed = off + size, 0
        while off < end:
            typ, _misc, rsize = struct.unpack_from("<IHH", m, off)
            if rsize == 0:
                raise SystemExit(f"{path}: zero-sized record at {off:#x}")
            if typ == KSYMBOL:
                nul = m.find(b"\0", off + 24, off + rsize)
                name = (nul + 1 - (off + 24) + 7) // 8 * 8
                trailer = off + 24 + name
                gap = m[trailer : off + rsize - SAMPLE_ID]
                if nul >= 0 and trailer + SAMPLE_ID < off + rsize and gap.strip(b"\0"):  # zeros: fixed already
                    sid = m[trailer : trailer + SAMPLE_ID]
                    m[trailer : off + rsize] = b"\0" * (off + rsize - trailer)
                    m[off + rsize - SAMPLE_ID : off + rsize] = sid
                    fixed += 1
            off += rsize
    return fixed


if __name__ == "__main__":
    print(f"{fix(sys.argv[1])} KSYMBOL records fixed")

"""Raw samples from ``perf script -D``: pid, tid, the user call chain (leaf first) and the user sp, as the
kernel recorded them (perf script's own text prints map-relative addresses, not the ones recorded)."""

from __future__ import annotations

import re
from dataclasses import dataclass

USER_CONTEXT = 0xFFFFFFFFFFFFFE00  # PERF_CONTEXT_USER in a raw call chain
_HEAD = re.compile(rb"PERF_RECORD_SAMPLE\([^)]*\): (\d+)/(\d+):")
_ENTRY = re.compile(rb"^\.\.\.\.\.\s+\d+: ([0-9a-f]+)$")
_SP = re.compile(rb"^\.\.\.\. SP\s+0x([0-9a-f]+)$")


@dataclass(frozen=True)
class RawSample:
    pid: int
    tid: int
    user: tuple[int, ...]  # the user part of the call chain, leaf first
    sp: int | None  # perf record --user-regs=sp


def samples(dump: bytes) -> list[RawSample]:
    out = []
    for record in dump.split(b"PERF_RECORD_SAMPLE(")[1:]:
        head = _HEAD.search(b"PERF_RECORD_SAMPLE(" + record)
        if head is None:
            continue
        chain, sp = [], None
        for line in record.splitlines():
            if m := _ENTRY.match(line.strip()):
                chain.append(int(m.group(1), 16))
            elif m := _SP.match(line.strip()):
                sp = int(m.group(1), 16)
        user = chain[chain.index(USER_CONTEXT) + 1 :] if USER_CONTEXT in chain else []
        out.append(RawSample(int(head.group(1)), int(head.group(2)), tuple(user), sp))
    return out

"""recovered-callers.tsv: the callers a frame-pointer walk skips under a library leaf, recovered on the CPU.

glibc has no frame pointers, so perf's walk from a sample in ``send`` or ``memcpy`` goes from the leaf
straight to its caller's caller. pmuprof-offcpu's on-CPU sampler (``--sample-hz``) keeps such stacks with
the words above sp and unwinds their leaf with ``.eh_frame`` CFI. A perf sample of the same process whose
leaf and first return addresses (the *key*) equal a sampled stack's takes the callers recovered there;
pmuprof-perfdata ``--callers`` splices them in (native/perfdata/callers.h reads this file).

Where the leaf keeps data in the frame-pointer register (glibc's ``send`` and ``recv``), perf's walk stops at the leaf and the
sample has no return address to match. The sampler then found the chain by a scan above sp and recovers
the callers below it; such a stack is keyed on the thread, its user sp (perf records it with
``--user-regs=sp``) and the leaf, and gives the whole chain after the leaf. The same leaf at the same
stack depth in the same thread is, but for rare coincidences, the same call path; the rules below hold
for those keys too.

Only keys the sampler saw at least MIN_SUPPORT times, every time with the same callers, are written: one
call site that reaches the leaf through different callers (a function pointer) recovers nothing, rather
than a guess; a stack under the key whose unwind failed is an outcome of its own. A key seen n times,
always alike, can still hide a caller the sampler missed; taking ticks as independent draws, the share
of its perf samples that could be that other caller's is at most max_p p(1-p)^n < 1/(e(n+1)): under
3.4 % at n = MIN_SUPPORT, and only at such call sites.

    # pmuprof recovered callers 1
    PID<TAB>TID<TAB>SP<TAB>SAMPLES<TAB>KEY<TAB>RESUME<TAB>RECOVERED   (hex addresses, comma-separated)

TID and SP are 0 for a walk's key; else KEY is the leaf alone and RECOVERED the whole chain.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Iterable

from .. import outfile

HEADER = "# pmuprof recovered callers 1"
KEY = 4  # a walk key's addresses at most: native/offcpu/offcpu.h OFFCPU_SAMPLE_KEY, native/perfdata/callers.h
MIN_SUPPORT = 10  # sampled stacks a key needs (benchmarks/RESULTS.md: what it costs in recovered samples)


@dataclass(frozen=True)
class Sample:
    """The on-CPU sampler's ticks with one user stack (pmuprof-offcpu's "sample" lines, native/offcpu/dump.c)."""

    pid: int
    count: int
    key: tuple[int, ...]  # the leaf, then the frame-pointer walk's first return addresses (a stopped walk: the leaf)
    resume: int  # the walk's entry the recovered callers stand before
    recovered: tuple[int, ...]  # () nothing recovered; a stopped walk: the whole chain after the leaf
    tid: int = 0  # a stopped walk's thread and user sp (0: a walk's key)
    sp: int = 0


@dataclass(frozen=True)
class Row:
    pid: int
    samples: int
    key: tuple[int, ...]
    resume: int
    recovered: tuple[int, ...]
    tid: int = 0
    sp: int = 0


@dataclass(frozen=True)
class Table:
    """The rows to write, and what the sampler's ticks came to: recovered (in a row), ambiguous (a key whose
    stacks disagree, a failed unwind included), rare (a key seen fewer than MIN_SUPPORT times) and not
    recovered (the unwinder found nothing, or no key the reader can match)."""

    rows: tuple[Row, ...] = ()
    recovered: int = 0
    ambiguous: int = 0
    rare: int = 0
    unrecovered: int = 0


def matchable(s: Sample) -> bool:
    """Whether the reader can match a perf sample on s's key: a walk's key holds the leaf and at least one
    return address, and the recovered callers resume the walk inside it; a stopped walk's key is its leaf."""
    if s.tid:
        return len(s.key) == 1 and s.resume == 1
    return 2 <= len(s.key) <= KEY and 1 <= s.resume <= len(s.key)


def table(samples: Iterable[Sample], min_support: int = MIN_SUPPORT) -> Table:
    """One row per (pid, key) seen at least ``min_support`` times, whose stacks all recovered the same callers.
    A stack under the key whose unwind recovered nothing is an outcome of its own: the paths where the
    unwinder fails (a frame larger than the stack words kept) are not the others, so the key is ambiguous."""
    by_key: dict[tuple[int, int, int, tuple[int, ...]], dict[tuple[int, tuple[int, ...]], int]] = defaultdict(dict)
    unrecovered = 0
    for s in samples:
        if not matchable(s):
            unrecovered += s.count
            continue
        found = by_key[(s.pid, s.tid, s.sp, s.key)]
        outcome = (s.resume, s.recovered) if s.recovered else (0, ())
        found[outcome] = found.get(outcome, 0) + s.count
    rows, ambiguous, rare = [], 0, 0
    for (pid, tid, sp, key), found in sorted(by_key.items()):
        if len(found) > 1:
            ambiguous += sum(found.values())
            continue
        (resume, recovered), count = next(iter(found.items()))
        if not recovered:
            unrecovered += count
            continue
        if count < min_support:
            rare += count
            continue
        rows.append(Row(pid, count, key, resume, recovered, tid, sp))
    return Table(tuple(rows), sum(r.samples for r in rows), ambiguous, rare, unrecovered)


def _hex(addresses: tuple[int, ...]) -> str:
    return ",".join(f"{a:x}" for a in addresses)


def write(path: Path, rows: Iterable[Row]) -> None:
    """The table, atomically."""
    with outfile.open_text(path) as out:
        out.write(HEADER + "\n")
        for r in rows:
            out.write(f"{r.pid}\t{r.tid}\t{r.sp:x}\t{r.samples}\t{_hex(r.key)}\t{r.resume}\t{_hex(r.recovered)}\n")

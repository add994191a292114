"""recovered-callers.tsv: the callers a frame-pointer walk skips under a library leaf, recovered on the CPU.

glibc has no frame pointers, so perf's walk from a sample in ``send`` or ``memcpy`` goes from the leaf
straight to its caller's caller. pmuprof-offcpu's on-CPU sampler (``--sample-hz``) keeps such stacks with
the words above sp and unwinds their leaf with ``.eh_frame`` CFI. A perf sample of the same process whose
leaf and first return addresses (the *key*) equal a sampled stack's takes the callers recovered there;
pmuprof-perfdata ``--callers`` splices them in (native/perfdata/callers.h reads this file).

Where the leaf keeps data in ``rbp`` (glibc's ``send`` and ``recv``), perf's walk stops at the leaf and the
sample has no return address to match. The sampler then found the chain by a scan above sp and recovers
the callers below it; such a stack is keyed on the thread, its user sp (perf records it with
``--user-regs=sp``) and the leaf, and gives the whole chain after the leaf. The same leaf at the same
stack depth in the same thread is, but for rare coincidences, the same call path; the rules below hold
for those keys too.

Only keys the sampler saw at least MIN_SUPPORT times, every time with the same callers, are written: one
call site that reaches the leaf through different callers (a function pointer) recovers nothing, rather
than a guess. A key seen n times, always alike, can still hide a caller the sampler missed; the share of
its perf samples that could be that other caller's is at most max_p p(1-p)^n < 1/(e(n+1)): under 3.4 %
at n = MIN_SUPPORT, and only at such call sites.

    # pmuprof recovered callers 1
    PID<TAB>TID<TAB>SP<TAB>SAMPLES<TAB>KEY<TAB>RESUME<TAB>RECOVERED   (hex addresses, comma-separated)

TID and SP are 0 for a walk's key; else KEY is the leaf alone and RECOVERED the whole chain.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from .. import outfile

HEADER = "# pmuprof recovered callers 1"
MIN_SUPPORT = 10  # sampled stacks a key needs (benchmarks/RESULTS.md: what it costs in recovered samples)


@dataclass(frozen=True)
class Sample:
    """The sampler's ticks with one user stack (tools/native/offcpu.Sampled, as the model needs it)."""

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
    stacks disagree), rare (a key seen fewer than MIN_SUPPORT times) and not recovered (the unwinder found
    nothing, or no key)."""

    rows: tuple[Row, ...] = ()
    recovered: int = 0
    ambiguous: int = 0
    rare: int = 0
    unrecovered: int = 0


def table(samples: Iterable[Sample], min_support: int = MIN_SUPPORT) -> Table:
    """One row per (pid, key) seen at least ``min_support`` times, whose stacks all recovered the same callers."""
    by_key: dict[tuple[int, int, int, tuple[int, ...]], dict[tuple[int, tuple[int, ...]], int]] = defaultdict(dict)
    unrecovered = 0
    for s in samples:
        if not s.recovered or not s.key:
            unrecovered += s.count
            continue
        found = by_key[(s.pid, s.tid, s.sp, s.key)]
        found[(s.resume, s.recovered)] = found.get((s.resume, s.recovered), 0) + s.count
    rows, ambiguous, rare = [], 0, 0
    for (pid, tid, sp, key), found in sorted(by_key.items()):
        if len(found) > 1:
            ambiguous += sum(found.values())
            continue
        (resume, recovered), count = next(iter(found.items()))
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

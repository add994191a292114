"""Skid correction of the hottest functions: helper histograms → typed SkidFunctions and a summary.

perf charges a stalled instruction's time (PAUSE, fences, locked ops) to the instruction after it;
the native helper decodes each hot function and moves those samples back. Shares are fractions of
all the profile's samples; only corrected functions count, so they are lower bounds.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any
from collections.abc import Callable, Iterable, Mapping

from ..errors import PmuprofError
from ..model.analysis import Binary, FenceSite, Instruction, SkidFunction, SkidSummary
from ..model.labels import function_label, is_unnamed
from ..model.profile import Leaf
from . import binaries as binmod

# Full fences on x86 (they drain the store buffer): mfence (sfence rides along), a locked no-op on a
# stack slot (what GCC emits for __sync_synchronize() / a seq_cst fence), an xchg used as a seq_cst store.
FULL_FENCE_KINDS = ("fence", "lock-fence", "xchg-store")
FENCE_KINDS = FULL_FENCE_KINDS + ("lfence",)
LOCK_KINDS = ("lock", "xchg")
TOP_FUNCTIONS = 20  # hottest named functions corrected per binary
TOP_UNNAMED = 2000  # hottest unnamed leaf addresses per binary
# skid(file, samples, addresses=..., hot_only=..., debug=...) -> the native helper's JSON (tools.native.helper.skid)
Skid = Callable[..., dict]


def dso_matches(dso: str, binary: str) -> bool:
    """A perf dso (path as perf printed it) is this binary's recorded path: the same path, never just
    the same file name (two builds of one name on a host are two binaries)."""
    return dso == binary


def leaf_samples(
    leaves: Iterable[Leaf], binary: str, symbols: Iterable[str] | None = None
) -> list[tuple[str, int, int]]:
    """(symbol, offset, count) leaf samples of ``binary``, optionally only for some symbols."""
    want = set(symbols) if symbols is not None else None
    merged: Counter[tuple[str, int]] = Counter()
    for leaf in leaves:
        if leaf.symbol and dso_matches(leaf.dso, binary) and (want is None or leaf.symbol in want):
            merged[(leaf.symbol, leaf.offset)] += leaf.count
    return [(sym, off, cnt) for (sym, off), cnt in sorted(merged.items())]


def hot_symbols(leaves: Iterable[Leaf], binary: str, top: int = TOP_FUNCTIONS) -> list[str]:
    """The binary's named symbols with the most leaf samples, hottest first."""
    totals: Counter[str] = Counter()
    for leaf in leaves:
        if leaf.symbol and dso_matches(leaf.dso, binary) and not is_unnamed(leaf.symbol):
            totals[leaf.symbol] += leaf.count
    return [sym for sym, _ in sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))[:top]]


def unnamed_addresses(leaves: Iterable[Leaf], binary: str, top: int = TOP_UNNAMED) -> list[tuple[int, int]]:
    """(vaddr, count) leaf samples in unnamed code of ``binary`` (stripped binaries), hottest first."""
    merged: Counter[int] = Counter()
    for leaf in leaves:
        if not leaf.symbol and dso_matches(leaf.dso, binary):
            merged[leaf.offset] += leaf.count
    return sorted(merged.items(), key=lambda kv: (-kv[1], kv[0]))[:top]


def correct(leaves: tuple[Leaf, ...], binaries: Iterable[Binary], skid: Skid) -> tuple[SkidFunction, ...]:
    """Correct the hottest functions of every found binary that holds leaf samples."""
    rows: list[SkidFunction] = []
    binaries = tuple(binaries)
    shared = binmod.shared_paths(binaries)
    for binary in binaries:
        if not binary.file or binary.path in shared:  # leaves name a path, not a build: not told apart
            continue
        syms = hot_symbols(leaves, binary.path)
        unnamed = unnamed_addresses(leaves, binary.path)
        if syms or unnamed:
            result = skid(
                binary.file,
                leaf_samples(leaves, binary.path, syms),
                addresses=unnamed,
                hot_only=True,
                debug=binary.debuginfo,
            )
            rows += functions_of(result, binary.path)
    return tuple(rows)


def functions_of(result: Mapping[str, Any], binary: str) -> list[SkidFunction]:
    """The helper's function entries as SkidFunctions named as the flame graph names them.

    A named function keeps perf's spelling (``requested``); an unnamed one (found from .eh_frame)
    gets '[binary+0xSTART]' or '[binary+0xSTART pause]'.
    """
    rows = []
    for fn in result.get("functions", []):
        if fn.get("error") and not fn.get("instructions"):
            continue
        insns = tuple(
            Instruction(
                address=str(i.get("address")),
                offset=int(i.get("offset") or 0),
                text=str(i.get("text") or ""),
                kind=str(i.get("kind") or ""),
                raw=int(i.get("raw") or 0),
                corrected=int(i.get("corrected") or 0),
                ambiguous=bool(i.get("ambiguous")),
            )
            for i in fn.get("instructions", [])
        )
        symbol = fn.get("requested") or fn.get("symbol")
        if not symbol:
            pause = any(i.kind == "pause" for i in insns)
            symbol = function_label(os.path.basename(binary), int(str(fn.get("start")), 16), pause)
        rows.append(
            SkidFunction(
                symbol=str(symbol),
                binary=binary,
                build_id=result.get("build_id") or None,
                start=fn.get("start"),
                end=fn.get("end"),
                samples=int(fn.get("samples") or 0),
                moved=int(fn.get("moved") or 0),
                ambiguous_samples=int(fn.get("ambiguous_samples") or 0),
                corrected_by_kind={str(k): int(v) for k, v in (fn.get("corrected_by_kind") or {}).items()},
                instructions=insns,
                elf_symbol=str(fn.get("symbol") or "") if fn.get("requested") else "",
                error=str(fn.get("error") or ""),
            )
        )
    return rows


def left_out(binaries: Iterable[Binary]) -> tuple[str, ...]:
    """A line per path that ran as several builds: its hot spots are left out rather than mixed."""
    return tuple(
        f"{path} ran as {len(ids)} builds ({', '.join(ids)}): skid correction and instruction hot spots "
        "left out for it (leaf samples name the path, not the build) — report one process with --pid"
        for path, ids in binmod.shared_paths(b for b in binaries if b.file).items()
    )


def summary(functions: Iterable[SkidFunction], total: int) -> SkidSummary:
    """Shares of all samples on PAUSE, fences and locked ops after correction."""
    fns = list(functions)
    total = total or sum(f.samples for f in fns)

    def kind_total(kinds: tuple[str, ...]) -> int:
        return sum(n for f in fns for k, n in f.corrected_by_kind.items() if k in kinds)

    def frac(n: int) -> float:
        return round(n / total, 6) if total else 0.0

    moved = sum(f.moved for f in fns)
    return SkidSummary(
        pause_share=frac(kind_total(("pause",))),
        fence_share=frac(kind_total(FENCE_KINDS)),
        lock_share=frac(kind_total(LOCK_KINDS)),
        moved_share=frac(moved),
        samples_total=total,
        samples_corrected=sum(f.samples for f in fns),
        moved=moved,
        ambiguous=sum(f.ambiguous_samples for f in fns),
        functions_corrected=len(fns),
        fences=fence_sites(fns, total),
    )


def fence_form(insn: Instruction) -> str:
    """How a full fence is spelled in a report: the instruction, or what an xchg store is for."""
    return "xchg (a seq_cst store)" if insn.kind == "xchg-store" else insn.text


def fence_sites(functions: Iterable[SkidFunction], total: int) -> tuple[FenceSite, ...]:
    """Each function's corrected samples on full fences, hottest first (the rules name fences by function)."""
    sites = []
    for fn in functions:
        on = sorted(
            (i for i in fn.instructions if i.kind in FULL_FENCE_KINDS and i.corrected),
            key=lambda i: (-i.corrected, i.offset),
        )
        count = sum(i.corrected for i in on)
        if count:
            sites.append(
                FenceSite(
                    function=fn.symbol,
                    binary=fn.binary,
                    samples=count,
                    share=round(count / total, 6) if total else 0.0,
                    forms=tuple(dict.fromkeys(fence_form(i) for i in on)),
                )
            )
    return tuple(sorted(sites, key=lambda s: (-s.samples, s.function)))


def try_correct(
    leaves: tuple[Leaf, ...], binaries: tuple[Binary, ...], skid: Skid, total: int
) -> tuple[tuple[SkidFunction, ...], SkidSummary | None, str | None]:
    """correct() + summary(), or why it is off (no helper, a failing binary) without failing the report."""
    try:
        functions = correct(leaves, binaries, skid)
    except (PmuprofError, OSError) as err:
        return (), None, str(err)
    return functions, (summary(functions, total) if functions else None), None


def file_of(binaries: Iterable[Binary], dso: str) -> Path | None:
    """The found file behind a recorded dso path."""
    for b in binaries:
        if b.file and dso_matches(dso, b.path):
            return Path(b.file)
    return None

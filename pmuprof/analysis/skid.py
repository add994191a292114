"""Skid correction models: helper histograms → annotate view, report hot spots, run pause/fence shares.

Shapes (all plain JSON-ready dicts; ``address`` is a "0x…" string, counts are samples):

``annotate_model(fn, binary, build_id)`` — what ``pmuprof annotate --json`` prints::

    {"symbol", "binary", "build_id", "start", "end", "samples", "moved", "ambiguous_samples",
     "instructions": [{"address", "offset", "text", "kind", "raw", "corrected", "ambiguous"}],
     "warnings": [str]}

  ``kind`` is "" or one of pause, fence, lfence, lock, xchg, serialize, rdtsc; sum(raw) == sum(corrected).

``hotspots(profile, functions)`` — the report's "instruction hot spots (skid-corrected)" section::

    {"functions": [{"symbol", "binary", "samples", "share", "moved", "ambiguous_samples",
                    "corrected_by_kind": {"pause": n, ...},
                    "instructions": [{"address", "offset", "text", "kind", "raw", "corrected",
                                      "ambiguous", "moved_in"}]}],   # hottest corrected first
     "summary": <shares()>}

``shares(profile, functions)`` — stored as run.json ``skid``::

    {"pause_share", "fence_share", "lock_share", "moved_share", "samples_total", "samples_corrected",
     "moved", "ambiguous", "functions_corrected"}

  Shares are fractions (0–1) of all the profile's samples; only corrected functions count, so they are
  lower bounds. ``fence_share`` covers mfence/lfence/sfence, ``lock_share`` lock RMW and xchg.

``functions`` is the list stored in skid.json: the helper's function entries (see helper.skid) with
"binary" and "build_id" added to each.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..model.labels import function_label, is_unnamed, parse_function
from ..model.profile import Profile

FENCE_KINDS = ("fence", "lfence")
LOCK_KINDS = ("lock", "xchg")
INSN_KEYS = ("address", "offset", "text", "kind", "raw", "corrected", "ambiguous")


def dso_matches(dso: str, binary: str) -> bool:
    """A perf dso (path as perf printed it) names this binary: same path, or the same file name."""
    return dso == binary or os.path.basename(dso) == os.path.basename(binary)


def leaf_samples(profile: Profile, binary: str, symbols: Iterable[str] | None = None) -> list[tuple[str, int, int]]:
    """(symbol, offset, count) leaf samples of ``binary``, optionally only for some symbols."""
    want = set(symbols) if symbols is not None else None
    merged: Counter[tuple[str, int]] = Counter()
    for leaf in profile.leaves:
        if dso_matches(leaf.dso, binary) and (want is None or leaf.symbol in want):
            merged[(leaf.symbol, leaf.offset)] += leaf.count
    return [(sym, off, cnt) for (sym, off), cnt in sorted(merged.items())]


def hot_symbols(profile: Profile, binary: str, top: int = 20) -> list[str]:
    """The binary's symbols with the most leaf samples, hottest first."""
    totals: Counter[str] = Counter()
    for leaf in profile.leaves:
        if leaf.symbol and dso_matches(leaf.dso, binary) and not is_unnamed(leaf.symbol):
            totals[leaf.symbol] += leaf.count
    return [sym for sym, _ in sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))[:top]]


def unnamed_addresses(profile: Profile, binary: str, top: int = 2000) -> list[tuple[int, int]]:
    """(vaddr, count) leaf samples in unnamed code of ``binary`` (stripped binaries), hottest first."""
    merged: Counter[int] = Counter()
    for leaf in profile.leaves:
        if not leaf.symbol and dso_matches(leaf.dso, binary):
            merged[leaf.offset] += leaf.count
    return sorted(merged.items(), key=lambda kv: (-kv[1], kv[0]))[:top]


def binaries(profile: Profile) -> list[str]:
    """Target executables named in run.json, then the dsos with the most leaf samples."""
    out = [t["exe"] for t in profile.run.get("targets", []) if t.get("exe")]
    by_dso: Counter[str] = Counter()
    for leaf in profile.leaves:
        if leaf.dso.startswith("/"):
            by_dso[leaf.dso] += leaf.count
    out += [d for d, _ in by_dso.most_common() if not any(dso_matches(d, b) for b in out)]
    return out


def tag_functions(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The helper's function entries, each tagged with its binary and build-id (skid.json rows).

    Unnamed functions (stripped code, found from .eh_frame) get the flame graph's label,
    '[binary+0xSTART]' or '[binary+0xSTART pause]', so both views name them the same way.
    """
    binary = str(result.get("binary") or "")
    rows = []
    for fn in result.get("functions", []):
        row = {**fn, "binary": binary, "build_id": result.get("build_id")}
        if row.get("requested") and row.get("symbol"):  # show the name as perf and the flame graph do
            row["elf_symbol"], row["symbol"] = row["symbol"], row["requested"]
        if not row.get("symbol") and row.get("start") and not row.get("error"):
            pause = any(i.get("kind") == "pause" for i in row.get("instructions", []))
            row["symbol"] = function_label(os.path.basename(binary), int(str(row["start"]), 16), pause)
        rows.append(row)
    return rows


def annotate_model(fn: Mapping[str, Any], binary: str, build_id: str = "") -> dict[str, Any]:
    """One function's instruction listing with raw and corrected counts (pmuprof annotate --json)."""
    insns = [{k: i.get(k) for k in INSN_KEYS} for i in fn.get("instructions", [])]
    warnings = [fn["error"]] if fn.get("error") else []
    if fn.get("ambiguous_samples"):
        warnings.append(f"{fn['ambiguous_samples']} moved samples sit on a jump target: the thread may have "
                        "jumped there instead of stepping over the PAUSE/fence (marked ambiguous)")
    return {"symbol": fn.get("symbol") or fn.get("requested"), "binary": binary, "build_id": build_id,
            "start": fn.get("start"), "end": fn.get("end"), "samples": fn.get("samples", 0),
            "moved": fn.get("moved", 0), "ambiguous_samples": fn.get("ambiguous_samples", 0),
            "instructions": insns, "warnings": warnings}


def _kind_total(functions: Iterable[Mapping[str, Any]], kinds: Iterable[str]) -> int:
    kinds = tuple(kinds)
    return sum(n for fn in functions for k, n in fn.get("corrected_by_kind", {}).items() if k in kinds)


def shares(profile: Profile, functions: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Share of all samples that sit on PAUSE, fences and locked ops after correction (run.json skid)."""
    fns = [f for f in functions if not f.get("error") or f.get("instructions")]
    total = profile.total or sum(int(f.get("samples", 0)) for f in fns)
    moved = sum(int(f.get("moved", 0)) for f in fns)

    def frac(n: int) -> float:
        return round(n / total, 6) if total else 0.0

    return {"pause_share": frac(_kind_total(fns, ("pause",))), "fence_share": frac(_kind_total(fns, FENCE_KINDS)),
            "lock_share": frac(_kind_total(fns, LOCK_KINDS)), "moved_share": frac(moved),
            "samples_total": total, "samples_corrected": sum(int(f.get("samples", 0)) for f in fns),
            "moved": moved, "ambiguous": sum(int(f.get("ambiguous_samples", 0)) for f in fns),
            "functions_corrected": len(fns)}


def _hot_instructions(fn: Mapping[str, Any], top: int) -> list[dict[str, Any]]:
    insns = fn.get("instructions", [])
    rows = []
    for idx, ins in enumerate(insns):
        if not (ins.get("raw") or ins.get("corrected")):
            continue
        nxt = insns[idx + 1] if idx + 1 < len(insns) else {}
        moved_in = ins.get("corrected", 0) - ins.get("raw", 0) if ins.get("kind") else 0
        rows.append({**{k: ins.get(k) for k in INSN_KEYS}, "moved_in": max(moved_in, 0),
                     "next_text": nxt.get("text")})
    rows.sort(key=lambda r: (-r["corrected"], -r["raw"], r["offset"]))
    return rows[:top]


def hotspots(profile: Profile, functions: Iterable[Mapping[str, Any]], top_functions: int = 5,
             top_instructions: int = 6) -> dict[str, Any]:
    """Data for the report's "instruction hot spots (skid-corrected)" section (shape in the docstring)."""
    fns = [f for f in functions if f.get("instructions")]
    total = profile.total or 1
    fns.sort(key=lambda f: (-int(f.get("samples", 0)), str(f.get("symbol"))))
    rows = [{"symbol": f.get("symbol") or f.get("requested") or f"[unnamed {f.get('start')}]",
             "binary": f.get("binary"), "samples": f.get("samples", 0),
             "share": round(int(f.get("samples", 0)) / total, 6), "moved": f.get("moved", 0),
             "ambiguous_samples": f.get("ambiguous_samples", 0),
             "corrected_by_kind": dict(f.get("corrected_by_kind", {})),
             "instructions": _hot_instructions(f, top_instructions)}
            for f in fns[:top_functions]]
    return {"functions": rows, "summary": shares(profile, functions)}


def correct_run(out_dir: Path, run: Mapping[str, Any], top: int = 20) -> dict[str, Any] | None:
    """Correct the hottest functions of each target binary of a finished run directory.

    Returns {"functions": skid.json rows, "summary": shares()} or None when there are no leaf samples.
    Starts the helper (through pmuprof.helper); raises HelperError when it is missing or fails.
    """
    from ..tools.native import helper
    from ..model import rundir

    leaves = rundir.read_leaves(Path(out_dir) / rundir.LEAVES)
    if not leaves:
        return None
    profile = Profile({}, run, leaves=leaves)
    total = sum(leaf.count for leaf in leaves)
    rows: list[dict[str, Any]] = []
    for binary in binaries(profile):
        if not Path(binary).is_file():
            continue
        syms = hot_symbols(profile, binary, top)
        unnamed = unnamed_addresses(profile, binary)
        if syms or unnamed:
            rows += tag_functions(helper.skid(binary, leaf_samples(profile, binary, syms), addresses=unnamed,
                                              hot_only=True))
    if not rows:
        return None
    summary = shares(Profile({("all",): total}, run), rows)
    return {"functions": rows, "summary": summary}


def _unnamed_binary(profile: Profile, base: str) -> str | None:
    """The file behind an unnamed-function label's binary name (from the leaves, else the targets)."""
    cands = [leaf.dso for leaf in profile.leaves] + [t.get("exe") for t in profile.run.get("targets", [])]
    return next((c for c in cands if c and os.path.basename(c) == base and Path(c).is_file()), None)


def _pick_binary(profile: Profile, symbol: str) -> str | None:
    """The dso holding most of the symbol's leaf samples, else the run's first target exe on disk."""
    by_dso: Counter[str] = Counter()
    for leaf in profile.leaves:
        if leaf.symbol == symbol:
            by_dso[leaf.dso] += leaf.count
    cands = [d for d, _ in by_dso.most_common()] + [t.get("exe") for t in profile.run.get("targets", [])]
    for cand in cands:
        if cand and Path(cand).is_file():
            return cand
    return None


def annotate(input_path: Path, symbol: str, binary: str | None = None, pids: tuple[int, ...] = (),
             comms: tuple[str, ...] = ()) -> dict[str, Any]:
    """Load INPUT, run skid correction on one function, return annotate_model() (pmuprof annotate)."""
    from ..tools.native import helper
    from ..errors import InputError, UsageError
    from .load import load_input

    profile = load_input(Path(input_path), pids, comms)
    unnamed = parse_function(symbol)
    binary = binary or (_unnamed_binary(profile, unnamed[0]) if unnamed else _pick_binary(profile, symbol))
    if not binary:
        raise UsageError(f"cannot tell which binary holds {symbol}: no leaf samples name an existing file",
                         "pass --binary /path/to/the/profiled/executable")
    if unnamed:  # '[mariadbd+0xde2ac0 pause]': the .eh_frame function starting there, from its leaf addresses
        start = unnamed[1]
        result = helper.skid(binary, addresses=[(start, 0)] + unnamed_addresses(profile, binary, top=100000))
        fns = [f for f in tag_functions(result) if f.get("start") and int(str(f["start"]), 16) == start]
    else:
        samples = [(symbol, 0, 0)] + leaf_samples(profile, binary, [symbol])
        result = helper.skid(binary, samples)
        fns = [f for f in result.get("functions", []) if f.get("requested") == symbol]
    if not fns or (fns[0].get("error") and not fns[0].get("instructions")):
        why = fns[0].get("error") if fns else "no such function"
        raise InputError(f"{symbol} in {binary}: {why}",
                         "use the symbol name as the report shows it, and the exact binary that was profiled")
    model = annotate_model(fns[0], binary, result.get("build_id", ""))
    expected = {t.get("build_id") for t in profile.run.get("targets", [])
                if t.get("exe") and dso_matches(t["exe"], binary) and t.get("build_id")}
    if expected and result.get("build_id") not in expected:
        model["warnings"].append(f"build-id of {binary} ({result.get('build_id')}) differs from the profiled one "
                                 f"({', '.join(sorted(expected))}): the binary changed, offsets may be wrong")
    if not model["samples"]:
        model["warnings"].append(f"no leaf samples of {symbol} from {binary} in {input_path}")
    return model


def annotate_text(model: Mapping[str, Any]) -> str:
    """Plain-text listing: offset, raw, corrected, instruction; marks where samples moved."""
    lines = [f"{model['symbol']}  ({model['binary']}, {model['samples']} samples, {model['moved']} moved "
             f"back onto PAUSE/fence/locked instructions)", f"{'offset':>8} {'raw':>8} {'corrected':>9}  instruction"]
    for ins in model["instructions"]:
        mark = ""
        if ins["kind"] and ins["corrected"] > ins["raw"]:
            mark = f"   <- {ins['corrected'] - ins['raw']} moved from the instruction(s) after it"
        if ins["ambiguous"]:
            mark += "   (jump target: ambiguous)"
        lines.append(f"{ins['offset']:>8x} {ins['raw']:>8} {ins['corrected']:>9}  {ins['text']}{mark}")
    lines += [f"warning: {w}" for w in model.get("warnings", [])]
    return "\n".join(lines) + "\n"

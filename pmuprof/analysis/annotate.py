"""One function's instructions with raw and skid-corrected samples (``pmuprof annotate``)."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Mapping

from ..errors import InputError, UsageError
from ..model.analysis import Binary
from ..model.jsontypes import to_json
from ..model.labels import parse_function
from ..model.profile import Profile
from ..tools.elf import ident
from . import binaries as binmod
from .skid import functions_of, leaf_samples, unnamed_addresses

Skid = Callable[..., dict]


def binary_for(profile: Profile, symbol: str, lookup: binmod.Lookup) -> Binary:
    """The binary holding ``symbol``: an unnamed label's file name, else the dso with most of its leaf samples."""
    unnamed = parse_function(symbol)
    if unnamed:
        paths = [b.path for b in profile.analysis.binaries if os.path.basename(b.path) == unnamed[0]]
        paths += [t.exe for t in profile.run.targets if os.path.basename(t.exe) == unnamed[0]]
    else:
        by_dso: Counter[str] = Counter()
        for leaf in profile.leaves:
            if leaf.symbol == symbol:
                by_dso[leaf.dso] += leaf.count
        paths = [d for d, _ in by_dso.most_common()] + [t.exe for t in profile.run.targets if t.exe]
    recorded = {b.path: b.build_id for b in profile.analysis.binaries if b.build_id}
    recorded.update({t.exe: t.build_id for t in profile.run.targets if t.exe and t.build_id})
    found = [binmod.find(p, recorded.get(p), 0, lookup) for p in dict.fromkeys(paths) if p.startswith("/")]
    usable = [b for b in found if b.file]
    if usable:
        return usable[0]
    if found:
        raise InputError(found[0].problem, "")
    raise UsageError(f"cannot tell which binary holds {symbol}: no leaf samples name a binary",
                     "pass --binary /path/to/the/profiled/executable")


def annotate(profile: Profile, symbol: str, binary: Binary, skid: Skid) -> dict[str, Any]:
    """The function's listing (annotate_model) from the profile's leaf samples."""
    unnamed = parse_function(symbol)
    if unnamed:  # '[mariadbd+0xde2ac0 pause]': the .eh_frame function starting there
        start = unnamed[1]
        result = skid(binary.file, addresses=[(start, 0)] + unnamed_addresses(profile.leaves, binary.path, 100000),
                      debug=binary.debuginfo)
        fns = [f for f in functions_of(result, binary.path) if f.start and int(str(f.start), 16) == start]
    else:
        samples = [(symbol, 0, 0)] + leaf_samples(profile.leaves, binary.path, [symbol])
        result = skid(binary.file, samples, debug=binary.debuginfo)
        fns = [f for f in functions_of(result, binary.path) if f.symbol == symbol]
    if not fns:
        errors = [f.get("error") for f in result.get("functions", []) if f.get("error")]
        raise InputError(f"{symbol} in {binary.file}: {errors[0] if errors else 'no such function'}",
                         "use the symbol name as the report shows it, and the exact binary that was profiled")
    model = annotate_model(to_json(replace(fns[0], binary=str(binary.file))))
    if binary.problem:
        model["warnings"].append(binary.problem)
    if not model["samples"]:
        model["warnings"].append(f"no leaf samples of {symbol} from {binary.path} in {profile.source}")
    return model


def annotate_model(fn: Mapping[str, Any]) -> dict[str, Any]:
    """What ``pmuprof annotate --json`` prints: the listing with raw and corrected counts."""
    warnings = [fn["error"]] if fn.get("error") else []
    if fn.get("ambiguous_samples"):
        warnings.append(f"{fn['ambiguous_samples']} moved samples sit on a jump target: the thread may have "
                        "jumped there instead of stepping over the PAUSE/fence (marked ambiguous)")
    keys = ("symbol", "binary", "build_id", "start", "end", "samples", "moved", "ambiguous_samples", "instructions")
    return {**{k: fn.get(k) for k in keys}, "warnings": warnings}


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


def override(path: Path, profile: Profile) -> Binary:
    """--binary PATH: used as given, checked against the build-id the profile recorded for that name."""
    info = ident(path)
    if info is None:
        raise UsageError(f"{path}: not an ELF file", "pass the executable that was profiled")
    recorded = {t.build_id for t in profile.run.targets if t.build_id and os.path.basename(t.exe) == path.name}
    recorded |= {b.build_id for b in profile.analysis.binaries if b.build_id and os.path.basename(b.path) == path.name}
    problem = ""
    if recorded and info.build_id not in recorded:
        problem = (f"build-id of {path} ({info.build_id}) differs from the profiled one ({', '.join(sorted(recorded))}): "
                   "the binary changed, offsets may be wrong")
    return Binary(path=str(path), file=str(path), found_via="--binary", file_build_id=info.build_id,
                  verified=(info.build_id in recorded) if recorded else None, symbols="", problem=problem)

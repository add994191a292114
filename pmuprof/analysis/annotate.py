"""One function's instructions with raw and skid-corrected samples (``pmuprof annotate``)."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any
from collections.abc import Callable, Mapping

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
    """The binary holding ``symbol``: the one the analysis cut or corrected it from (path and build-id),
    else for an unnamed label the one binary of its file name, else the dso with most of its leaf samples."""
    recorded = _recorded(profile)
    unnamed = parse_function(symbol)
    if unnamed:
        pairs = _evidence(profile, symbol)
        if not pairs:
            pairs = [(p, bid) for p, bid in recorded if os.path.basename(p) == unnamed[0]]
        if len(set(pairs)) > 1:
            raise UsageError(
                f"{symbol} names {len(set(pairs))} binaries of this recording: "
                + ", ".join(f"{p} ({bid or 'no build-id'})" for p, bid in dict.fromkeys(pairs)),
                "pass --binary with the one to annotate, or --pid to choose the process",
            )
    else:
        by_dso: Counter[str] = Counter()
        for leaf in profile.leaves:
            if leaf.symbol == symbol:
                by_dso[leaf.dso] += leaf.count
        paths = [d for d, _ in by_dso.most_common()] + [t.exe for t in profile.run.targets if t.exe]
        ids = dict(recorded)  # a path that ran as several builds: one of them (leaves name the path only)
        pairs = [(p, ids.get(p)) for p in paths]
    found = [binmod.find(p, bid, 0, lookup) for p, bid in dict.fromkeys(pairs) if p.startswith("/")]
    usable = [b for b in found if b.file]
    if usable:
        return usable[0]
    if found:
        raise InputError(found[0].problem, "")
    raise UsageError(
        f"cannot tell which binary holds {symbol}: no leaf samples name a binary",
        "pass --binary /path/to/the/profiled/executable",
    )


def _recorded(profile: Profile) -> list[tuple[str, str | None]]:
    """(path, build-id) of every binary the profile names: its targets' and the analysis's."""
    pairs = [(t.exe, t.build_id) for t in profile.run.targets if t.exe]
    pairs += [(b.path, b.build_id) for b in profile.analysis.binaries]
    with_id = {p for p, bid in pairs if bid}
    return list(dict.fromkeys((p, bid) for p, bid in pairs if bid or p not in with_id))


def _evidence(profile: Profile, label: str) -> list[tuple[str, str | None]]:
    """(path, build-id) of the binaries the analysis cut or skid-corrected an unnamed function from."""
    pairs = [(f.binary, f.build_id) for f in profile.analysis.skid_functions if f.symbol == label]
    for row in profile.analysis.unnamed:
        if row.label == label:
            pairs += [
                binmod.key(b)
                for b in profile.analysis.binaries
                if b.file == row.binary and row.build_id in (None, binmod.key(b)[1])
            ]
    return pairs


def annotate(profile: Profile, symbol: str, binary: Binary, skid: Skid) -> dict[str, Any]:
    """The function's listing (annotate_model) from the profile's leaf samples."""
    unnamed = parse_function(symbol)
    if unnamed:  # '[mariadbd+0xde2ac0 pause]': the .eh_frame function starting there
        start = unnamed[1]
        result = skid(
            binary.file,
            addresses=[(start, 0)] + unnamed_addresses(profile.leaves, binary.path, 100000),
            debug=binary.debuginfo,
        )
        fns = [f for f in functions_of(result, binary.path) if f.start and int(str(f.start), 16) == start]
    else:
        samples = [(symbol, 0, 0)] + leaf_samples(profile.leaves, binary.path, [symbol])
        result = skid(binary.file, samples, debug=binary.debuginfo)
        fns = [f for f in functions_of(result, binary.path) if f.symbol == symbol]
    if not fns:
        errors = [f.get("error") for f in result.get("functions", []) if f.get("error")]
        raise InputError(
            f"{symbol} in {binary.file}: {errors[0] if errors else 'no such function'}",
            "use the symbol name as the report shows it, and the exact binary that was profiled",
        )
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
        warnings.append(
            f"{fn['ambiguous_samples']} moved samples sit on a jump target: the thread may have "
            "jumped there instead of stepping over the PAUSE/fence (marked ambiguous)"
        )
    keys = ("symbol", "binary", "build_id", "start", "end", "samples", "moved", "ambiguous_samples", "instructions")
    return {**{k: fn.get(k) for k in keys}, "warnings": warnings}


def annotate_text(model: Mapping[str, Any]) -> str:
    """Plain-text listing: offset, raw, corrected, instruction; marks where samples moved."""
    lines = [
        f"{model['symbol']}  ({model['binary']}, {model['samples']} samples, {model['moved']} moved "
        f"back onto PAUSE/fence/locked instructions)",
        f"{'offset':>8} {'raw':>8} {'corrected':>9}  instruction",
    ]
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
    """--binary PATH: used as given for the recorded binary with its build-id (else the one recorded
    binary of its file name), and checked against the build-id the profile recorded for that name."""
    info = ident(path)
    if info is None:
        raise UsageError(f"{path}: not an ELF file", "pass the executable that was profiled")
    recorded = _recorded(profile)
    same = [p for p, bid in recorded if bid and bid == info.build_id]
    named = [(p, bid) for p, bid in recorded if os.path.basename(p) == path.name]
    ids = {bid for _, bid in named if bid}
    paths = list(dict.fromkeys(p for p, _ in named))
    problem = ""
    if not same and ids:
        problem = (
            f"build-id of {path} ({info.build_id}) differs from the profiled one ({', '.join(sorted(ids))}): "
            "the binary changed, offsets may be wrong"
        )
    where = same[0] if same else (paths[0] if len(paths) == 1 else str(path))
    return Binary(
        path=where,
        file=str(path),
        found_via="--binary",
        file_build_id=info.build_id,
        verified=bool(same) if (same or ids) else None,
        symbols="",
        problem=problem,
    )

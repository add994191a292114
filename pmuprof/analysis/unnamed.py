"""Unnamed code: name it from a debug file when one was found, else group it into .eh_frame functions.

perf leaves a frame unnamed when its binary has no symbol for it (a stripped binary, or only
.dynsym); folding keeps such frames as ``[dso@0xVADDR]``. Here each becomes the function's name
(from separate debuginfo), or ``[dso+0xSTART]`` / ``[dso+0xSTART pause]`` for the .eh_frame function
holding it — never a guessed name — or ``[dso]`` when its binary was not found.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping

import numpy as np

from ..errors import PmuprofError
from ..model.analysis import Binary, UnnamedFunction
from ..model.labels import UNKNOWN, clean, frame_label, function_label, is_unnamed, parse_raw
from ..model.stacks import Stacks, id_dtype
from .binaries import Mapped, key, owners

# funcs(file, vaddrs, debug=None) -> the native helper's JSON (tools.native.helper.funcs)
Funcs = Callable[..., dict]


def group(
    stacks: Stacks, binaries: tuple[Binary, ...], funcs: Funcs
) -> tuple[Stacks, tuple[UnnamedFunction, ...], str | None]:
    """Relabel raw unnamed frames; returns (stacks, unnamed functions, why grouping was off or None)."""
    out, _rows, functions, reason, _ = group_rows(stacks, binaries, funcs)
    return out, functions, reason


def group_rows(
    stacks: Stacks, binaries: tuple[Binary, ...], funcs: Funcs, mapped: Mapping[str, Mapped] | None = None
) -> tuple[Stacks, np.ndarray | None, tuple[UnnamedFunction, ...], str | None, tuple[str, ...]]:
    """``group``, with the new row of each old row (None: rows unchanged) for the sample table to follow,
    and a line per file name whose unnamed code nothing tells apart between two binaries of that name.

    A raw frame is cut by the binary its own process mapped (``mapped``: per process root, see
    binaries.owners): two processes running different builds of one name each get their own."""
    if not any(is_unnamed(f) and parse_raw(f) for f in stacks.frames):
        return stacks, None, (), None, ()
    per_root, unclear = owners(binaries, mapped or {})
    roots = {f: per_root.get(stacks.frames[f], per_root[""]) for f in np.unique(stacks.root_ids).tolist()}
    work, raw = _split(stacks, roots)
    wanted, lines = _by_binary(raw, roots, unclear)
    labels: dict[str, str] = {}
    info: dict[str, dict] = {}
    reason = None
    for binary, base, addrs in wanted.values():
        try:
            data = funcs(binary.file, sorted(addrs), debug=binary.debuginfo)
        except (PmuprofError, OSError) as err:
            reason = str(err)
            continue
        for entry in data.get("addresses", []):
            label = _label(base, entry, info, binary, data.get("build_id"))
            if label:
                for frame in addrs.get(int(entry["input"], 16), ()):
                    labels[frame] = label
    for frame, (base, _, _) in raw.items():
        labels.setdefault(frame, frame_label(UNKNOWN, base))  # binary not found: '[dso]'
    out, rows = work.relabel_rows([labels.get(f, f) for f in work.frames])
    return out, rows, _table(out, info), reason, lines


Cut = tuple[Binary, str, dict[int, set[str]]]  # a binary, its raw labels' name, vaddr -> raw frames


def _by_binary(
    raw: Mapping[str, tuple[str, int, int]], roots: Mapping[int, Mapping[str, Binary]], unclear: Mapping[str, str]
) -> tuple[dict[tuple[str, str | None], Cut], tuple[str, ...]]:
    """The raw frames each binary (by key) is asked about, and a line per name left ungrouped."""
    wanted: dict[tuple[str, str | None], Cut] = {}
    lines: list[str] = []
    for frame, (base, vaddr, root) in raw.items():
        binary = roots[root].get(base)
        if binary is not None:
            wanted.setdefault(key(binary), (binary, base, defaultdict(set)))[2][vaddr].add(frame)
        elif base in unclear:
            lines.append(
                f"unnamed code of {base} left ungrouped: {unclear[base]} all hold it and the recording "
                "does not say which process mapped which — capture with pmuprof capture -p PID, or "
                "report one process with --pid"
            )
    return wanted, tuple(dict.fromkeys(lines))


def _split(stacks: Stacks, roots: Mapping[int, Mapping[str, Binary]]) -> tuple[Stacks, dict[str, tuple[str, int, int]]]:
    """The stacks to relabel and their raw frames -> (base, vaddr, root id). Where processes that share
    a raw frame take its name to different binaries, each process's occurrences become a frame of their
    own (spelled ``raw\troot``, relabelled before anyone sees it); else the stacks are left as they are."""
    raw = {i: p for i, f in enumerate(stacks.frames) if is_unnamed(f) and (p := parse_raw(f))}
    picks = {base: {key(b) if (b := m.get(base)) else None for m in roots.values()} for base, _ in raw.values()}
    if all(len(v) == 1 for v in picks.values()):
        any_root = next(iter(roots))
        return stacks, {stacks.frames[i]: (b, v, any_root) for i, (b, v) in raw.items()}
    nf = len(stacks.frames)
    is_raw = np.zeros(nf, dtype=bool)
    is_raw[list(raw)] = True
    new_id = np.cumsum(~is_raw) - 1  # kept frames, in order
    kept = [f for i, f in enumerate(stacks.frames) if not is_raw[i]]
    ids = new_id[stacks.ids].astype(np.int64)
    at = np.flatnonzero(is_raw[stacks.ids])
    pairs = stacks.ids[at].astype(np.int64) * nf + np.repeat(stacks.root_ids, stacks.lengths)[at]
    uniq, inverse = np.unique(pairs, return_inverse=True)
    ids[at] = len(kept) + inverse.reshape(-1)
    out: dict[str, tuple[str, int, int]] = {}
    for u in uniq.tolist():
        frame, root = divmod(u, nf)
        out[f"{stacks.frames[frame]}\t{stacks.frames[root]}"] = (*raw[frame], root)
    frames = kept + list(out)
    return Stacks(frames, ids.astype(id_dtype(len(frames))), stacks.offsets, stacks.counts), out


def _label(base: str, entry: dict, info: dict[str, dict], binary: Binary, build_id: str | None) -> str | None:
    """The frame's new label: the debug file's function name, else the .eh_frame function's address label."""
    if entry.get("display") and binary.debuginfo:
        return clean(entry["display"])
    if "start" not in entry:
        return None
    start, pause = int(entry["start"], 16), bool(entry.get("contains_pause"))
    label = function_label(base, start, pause)
    info[label] = {
        "label": label,
        "binary": str(binary.file),
        "start": entry["start"],
        "end": entry.get("end"),
        "contains_pause": pause,
        "build_id": build_id,
    }
    return label


def _table(stacks: Stacks, info: dict[str, dict]) -> tuple[UnnamedFunction, ...]:
    """Per unnamed function: self/inclusive samples and the nearest named callers that reach it."""
    ids = {stacks.frame_index[label]: label for label in info if label in stacks.frame_index}
    if not ids:
        return ()
    wanted = np.fromiter(ids, dtype=np.int64, count=len(ids))
    self_n, incl_n = stacks.frame_self(), stacks.inclusive_of(wanted)
    callers = _named_callers(stacks, wanted)
    rows = [
        UnnamedFunction(
            **info[label], self=int(self_n[f]), inclusive=int(incl_n[f]), called_from=tuple(callers.get(f, ()))
        )
        for f, label in ids.items()
        if incl_n[f]
    ]
    return tuple(sorted(rows, key=lambda r: (-r.self, -r.inclusive, r.label)))


def _named_callers(stacks: Stacks, wanted: np.ndarray, top: int = 3) -> dict[int, list[str]]:
    """For each wanted frame id, the named frames nearest above its occurrences (most samples first;
    "(no named caller)" when there is none below the process root). Only the rows holding a wanted frame
    are read, a block of rows at a time."""
    nf = len(stacks.frames)
    named = np.fromiter((not is_unnamed(f) for f in stacks.frames), dtype=bool, count=nf)
    lut = np.zeros(nf, dtype=bool)
    lut[wanted] = True
    stacks = stacks.take(np.unique(stacks.rows_at(np.flatnonzero(lut[stacks.ids]))))  # the rows holding one
    keys, sums = [], []
    for lo, hi in stacks.blocks():
        a, b = int(stacks.offsets[lo]), int(stacks.offsets[hi])
        ids, lengths = stacks.ids[a:b], stacks.lengths[lo:hi]
        at = np.flatnonzero(lut[ids])
        if not len(at):
            continue
        start = np.repeat((stacks.offsets[lo:hi] - a).astype(np.int32), lengths)
        pos = np.arange(b - a, dtype=np.int32)
        marks = np.where(named[ids] & (pos > start), pos, -1)
        nearest = np.concatenate(([-1], np.maximum.accumulate(marks)[:-1])).astype(np.int32)
        caller = np.where(nearest[at] > start[at], ids[np.maximum(nearest[at], 0)].astype(np.int64), -1)
        key = ids[at].astype(np.int64) * (nf + 1) + (caller + 1)
        rows = np.repeat(np.arange(lo, hi, dtype=np.int32), lengths)[at]
        uniq, inverse = np.unique(key, return_inverse=True)
        keys.append(uniq)
        sums.append(np.bincount(inverse.reshape(-1), weights=stacks.counts[rows]))
    if not keys:
        return {}
    uniq, inverse = np.unique(np.concatenate(keys), return_inverse=True)
    total = np.bincount(inverse.reshape(-1), weights=np.concatenate(sums))
    out: dict[int, list[tuple[int, str]]] = {}
    for k, n in zip(uniq.tolist(), total.tolist()):
        f, c = divmod(k, nf + 1)
        out.setdefault(f, []).append((int(n), stacks.frames[c - 1] if c else "(no named caller)"))
    return {f: [name for _, name in sorted(v, key=lambda t: -t[0])[:top]] for f, v in out.items()}

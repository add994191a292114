"""Unnamed code: name it from a debug file when one was found, else group it into .eh_frame functions.

perf leaves a frame unnamed when its binary has no symbol for it (a stripped binary, or only
.dynsym); folding keeps such frames as ``[dso@0xVADDR]``. Here each becomes the function's name
(from separate debuginfo), or ``[dso+0xSTART]`` / ``[dso+0xSTART pause]`` for the .eh_frame function
holding it — never a guessed name — or ``[dso]`` when its binary was not found.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Callable, Mapping

from ..errors import PmuprofError
from ..model.analysis import Binary, UnnamedFunction
from ..model.labels import UNKNOWN, clean, frame_label, function_label, is_unnamed, parse_raw
from ..model.profile import Stack

# funcs(file, vaddrs, debug=None) -> the native helper's JSON (tools.native.helper.funcs)
Funcs = Callable[..., dict]


def group(stacks: Mapping[Stack, int], binaries: tuple[Binary, ...],
          funcs: Funcs) -> tuple[dict[Stack, int], tuple[UnnamedFunction, ...], str | None]:
    """Relabel raw unnamed frames; returns (stacks, unnamed functions, why grouping was off or None)."""
    raw = {f: parsed for f in {f for s in stacks for f in s if is_unnamed(f)} if (parsed := parse_raw(f))}
    if not raw:
        return dict(stacks), (), None
    by_base = {Path(b.path).name: b for b in binaries if b.file}
    wanted: dict[str, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    for frame, (base, vaddr) in raw.items():
        if base in by_base:
            wanted[base][vaddr].add(frame)
    labels: dict[str, str] = {}
    info: dict[str, dict] = {}
    reason = None
    for base, addrs in wanted.items():
        binary = by_base[base]
        try:
            data = funcs(binary.file, sorted(addrs), debug=binary.debuginfo)
        except (PmuprofError, OSError) as err:
            reason = str(err)
            continue
        for entry in data.get("addresses", []):
            label = _label(base, entry, info, binary, data.get("build_id"))
            for frame in addrs.get(int(entry["input"], 16), ()) if label else ():
                labels[frame] = label
    for frame, (base, _) in raw.items():
        labels.setdefault(frame, frame_label(UNKNOWN, base))  # binary not found: '[dso]'
    out: Counter = Counter()
    for stack, count in stacks.items():
        out[tuple(labels.get(f, f) for f in stack)] += count
    return dict(out), _table(out, info), reason


def _label(base: str, entry: dict, info: dict[str, dict], binary: Binary, build_id: str | None) -> str | None:
    """The frame's new label: the debug file's function name, else the .eh_frame function's address label."""
    if entry.get("display") and binary.debuginfo:
        return clean(entry["display"])
    if "start" not in entry:
        return None
    start, pause = int(entry["start"], 16), bool(entry.get("contains_pause"))
    label = function_label(base, start, pause)
    info[label] = {"label": label, "binary": str(binary.file), "start": entry["start"], "end": entry.get("end"),
                   "contains_pause": pause, "build_id": build_id}
    return label


def _table(stacks: Mapping[Stack, int], info: dict[str, dict]) -> tuple[UnnamedFunction, ...]:
    """Per unnamed function: self/inclusive samples and the nearest named callers that reach it."""
    self_n, incl_n, callers = Counter(), Counter(), defaultdict(Counter)
    for stack, count in stacks.items():
        if stack[-1] in info:
            self_n[stack[-1]] += count
        for i, frame in enumerate(stack):
            if frame in info:
                named = next((f for f in reversed(stack[1:i]) if not is_unnamed(f)), None)
                callers[frame][named or "(no named caller)"] += count
        for frame in set(stack) & info.keys():
            incl_n[frame] += count
    rows = [UnnamedFunction(**meta, self=self_n[label], inclusive=incl_n[label],
                            called_from=tuple(name for name, _ in callers[label].most_common(3)))
            for label, meta in info.items() if incl_n[label]]
    return tuple(sorted(rows, key=lambda r: (-r.self, -r.inclusive, r.label)))

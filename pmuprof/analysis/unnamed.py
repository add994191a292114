"""Stripped binaries: group unnamed frames into .eh_frame functions, labelled by address, never by a guess."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Mapping

from ..errors import PmuprofError
from ..model.labels import UNKNOWN, frame_label, function_label, is_unnamed, parse_raw
from ..model.profile import Stack



def binary_paths(targets: list[dict]) -> dict[str, str]:
    """basename → path of the targets' executables and mapped libraries."""
    out: dict[str, str] = {}
    for tgt in targets:
        for m in tgt.get("maps", []):
            out.setdefault(Path(m["path"]).name, m["path"])
        if tgt.get("exe"):
            out[Path(tgt["exe"]).name] = tgt["exe"]
    return out


def resolve(stacks: Mapping[Stack, int], paths: Mapping[str, str], lookup) -> tuple[dict, list[dict], str | None]:
    """Relabel raw unnamed frames. ``lookup(path, vaddrs)`` returns the helper's funcs() JSON.

    Returns (stacks, unnamed function table, reason grouping was off or None).
    """
    raw = {f: parsed for f in {f for stack in stacks for f in stack if is_unnamed(f)} if (parsed := parse_raw(f))}
    if not raw:
        return dict(stacks), [], None
    wanted: dict[str, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    for frame, (base, vaddr) in raw.items():
        if base in paths:
            wanted[paths[base]][vaddr].add(frame)
    labels: dict[str, str] = {}
    info: dict[str, dict] = {}
    reason = None
    for path, offsets in wanted.items():
        try:
            data = lookup(path, sorted(offsets))
        except (PmuprofError, OSError) as err:
            reason = str(err)
            continue
        for entry in data.get("addresses", []):
            if "start" not in entry:
                continue
            start, pause = int(entry["start"], 16), bool(entry.get("contains_pause"))
            base = Path(path).name
            label = function_label(base, start, pause)
            for frame in offsets.get(int(entry["input"], 16), ()):
                labels[frame] = label
            info[label] = {"label": label, "binary": path, "start": entry["start"], "end": entry.get("end"),
                           "contains_pause": pause, "build_id": data.get("build_id")}
    for frame, (base, _) in raw.items():
        labels.setdefault(frame, frame_label(UNKNOWN, base))  # ungrouped: '[dso]' 
    out: Counter = Counter()
    for stack, count in stacks.items():
        out[tuple(labels.get(f, f) for f in stack)] += count
    return dict(out), _table(out, info), reason


def _table(stacks: Mapping[Stack, int], info: dict[str, dict]) -> list[dict]:
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
    rows = []
    for label, meta in info.items():
        if incl_n[label]:
            rows.append({**meta, "self": self_n[label], "inclusive": incl_n[label],
                         "called_from": [name for name, _ in callers[label].most_common(3)]})
    return sorted(rows, key=lambda r: (-r["self"], -r["inclusive"], r["label"]))

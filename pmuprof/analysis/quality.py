"""Stack quality per process: unnamed code, truncated stacks and missing frame pointers, kept apart.

Each condition has its own cause and fix: unnamed frames inside a known binary mean a stripped
binary or missing debuginfo; named stacks whose outermost frame is not a thread entry were cut
(a DWARF stack copy too short, or frames lost where code has no frame pointers); a target binary
compiled without frame pointers loses callers under ``--call-graph fp``. Kernel code no kallsyms here
names (a perf.data of another boot) is none of these: it is counted apart.
"""

from __future__ import annotations

import fnmatch
from collections import Counter

import numpy as np

from ..model.analysis import StackQuality
from ..model.labels import is_kernel, is_unnamed, is_unresolved_kernel, parse_function, parse_raw
from ..model.stacks import Stacks
from ..model.run import Run

# Outermost frames of a complete user stack: thread and process entry points (and kernel threads).
THREAD_ENTRIES = (
    "start_thread",
    "clone",
    "clone3",
    "__clone",
    "__clone3",
    "__clone_internal",
    "_start",
    "__libc_start_main*",
    "__libc_start_call_main",
    "thread_start",
    "ret_from_fork*",
)
NOT_CODE = ("[vdso]", "[vsyscall]")


def is_entry(frame: str) -> bool:
    name = frame[:-4] if is_kernel(frame) else frame
    return any(fnmatch.fnmatchcase(name, pat) for pat in THREAD_ENTRIES)


def binary_of(label: str) -> str | None:
    """The binary an unnamed label points into: [base], [base+0x..], [base@0x..]; None for [unknown]."""
    parsed = parse_function(label) or parse_raw(label)
    if parsed:
        return parsed[0]
    inner = label[1:-1]
    return None if inner in ("unknown", "") or inner.startswith("kernel") else inner


def for_process(stacks: Stacks, process: str, run: Run) -> StackQuality:
    """The quality facts of one process's stacks (root label ``process``), from per-frame flags."""
    mine = stacks.take(stacks.root_ids == stacks.root_id(process))
    frames = mine.frames
    total = mine.total
    deep = mine.lengths >= 2
    counts = mine.counts
    kernel_f = np.fromiter((is_unresolved_kernel(f) for f in frames), dtype=bool, count=len(frames))
    unnamed_f = (
        np.fromiter(
            (is_unnamed(f) and f not in NOT_CODE and not is_kernel(f) for f in frames), dtype=bool, count=len(frames)
        )
        & ~kernel_f
    )
    leaf = mine.leaf_ids
    unnamed_rows = deep & unnamed_f[leaf]
    by_leaf = np.bincount(leaf[unnamed_rows], weights=counts[unnamed_rows], minlength=len(frames))
    binaries: Counter[str] = Counter()
    functions: set[str] = set()
    for f in np.flatnonzero(by_leaf).tolist():
        base = binary_of(frames[f])
        if base:
            binaries[base] += int(by_leaf[f])
        if parse_function(frames[f]):
            functions.add(frames[f])
    outer_ok = np.fromiter((is_entry(f) or is_kernel(f) for f in frames), dtype=bool, count=len(frames))
    outer = mine.ids[mine.offsets[:-1][deep] + 1] if deep.any() else np.zeros(0, np.int64)
    truncated = int(counts[deep][~outer_ok[outer]].sum()) if len(outer) else 0
    shallow = int(counts[deep & (mine.lengths <= 3)].sum())
    unnamed = int(counts[unnamed_rows].sum())
    target = run.target_for(process)
    no_fp = tuple(
        t.exe for t in ([target] if target else []) if t.symbols is not None and t.symbols.frame_pointers == "absent"
    )

    def share(n: int) -> float:
        return round(n / total, 6) if total else 0.0

    return StackQuality(
        process=process,
        call_graph=run.record.call_graph,
        samples=total,
        unnamed_share=share(unnamed),
        unnamed_binaries=tuple(b for b, _ in binaries.most_common()),
        unnamed_functions=len(functions),
        pause_functions_hot=sum(1 for f in functions if (parse_function(f) or ("", 0, False))[2]),
        truncated_share=share(truncated),
        shallow_share=share(shallow),
        no_frame_pointers=no_fp,
        unresolved_kernel_share=share(int(counts[kernel_f[leaf]].sum())),
    )

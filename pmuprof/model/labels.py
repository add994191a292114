"""The frame-label grammar of folded stacks: the one Python spelling of every bracketed label.

The grammar (docs/internals.md "Frame labels"; native/lib/frames.c writes the same bytes and
tests/native/test_fold.py holds the two to it):

    name_[k]              a kernel frame
    name_[i]              a call inlined into the frame below it (DWARF inline chain; perf script
                          --inline's "(inlined)" lines): its callers and callees are the frames beside it
    [dso]                 unnamed code of a DSO (its file name), e.g. [libc.so.6]
    [unknown]             unnamed code of no known DSO
    [dso@0xVADDR]         unnamed code kept with its ELF virtual address, before grouping
    [dso+0xSTART]         an unnamed function (one .eh_frame FDE starting at START)
    [dso+0xSTART pause]   the same, when the function contains a PAUSE instruction

In every label ``;`` (the folded separator) becomes ``:``; process roots also turn blanks into ``_``.

Off-CPU stacks (offcpu.folded) end in one more frame, the thread's state while it was off the CPU:

    off-cpu:R   runnable (preempted): waited for a CPU
    off-cpu:S   interruptible sleep: futex (locks, condition variables), poll, network, timers
    off-cpu:D   uninterruptible: disk I/O, page faults, kernel locks
    off-cpu:T   stopped or traced
    off-cpu:?   any other state
    off-cpu:W   woken, waiting for a CPU: the part of a sleep (S, D, ...) after its wake-up, when the tracer
                saw it (sched_wakeup); the same stack's blocked part ends in the state it slept in

Under a process root, the blocks shorter than the tracer's threshold (kept without stacks, their time
exact) stand as one frame above the state leaf:

    [short blocks < 1 ms]   (or ``< 250 us``: the threshold, in ms when it is whole ms)
"""

from __future__ import annotations

import re

KERNEL_SUFFIX = "_[k]"
INLINE_SUFFIX = "_[i]"
INLINED_DSO = "inlined"  # what perf script --inline (and pmuprof-perfdata --inline) print as an inlined call's dso
UNKNOWN = "[unknown]"
# DSO names in brackets that are user space, not the kernel.
USER_PSEUDO_DSOS = frozenset({"[unknown]", "[vdso]", "[vsyscall]", "[heap]", "[stack]", "[anon]", "[uprobes]"})

OFFCPU_STATE_PREFIX = "off-cpu:"
OFFCPU_STATES = {
    "R": "runnable: preempted, waited for a CPU",
    "S": "sleeping: locks, condition variables, network, timers (interruptible)",
    "D": "uninterruptible: disk I/O, page faults, kernel locks",
    "T": "stopped or traced",
    "?": "another state",
    "W": "woken, waiting for a CPU: runnable after the wake-up that ended a sleep",
}
BLOCKED_STATES = frozenset("SDT?")  # off the CPU and not runnable: the waits a rule names
RUNNABLE_STATES = frozenset("RW")  # waiting for a CPU: preempted, or woken and not yet run

SHORT_BLOCKS_PREFIX = "[short blocks < "
_SHORT = re.compile(r"^\[short blocks < (?P<n>[0-9]+) (?P<unit>ms|us)\]$")
_RAW = re.compile(r"^\[(?P<base>[^@\]]+)@0x(?P<addr>[0-9a-f]+)\]$")
_FUNCTION = re.compile(r"^\[(?P<base>[^+\]]+)\+0x(?P<start>[0-9a-fA-F]+)(?P<pause> pause)?\]$")
_KERNEL = re.compile(r"_\[[kji]\]$")


def clean(name: str) -> str:
    """A name safe inside a folded line: the separator ``;`` becomes ``:``."""
    return name.replace(";", ":")


def dso_base(dso: str) -> str:
    """The file name perf's DSO path ends in, safe for a label."""
    return clean(dso.rsplit("/", 1)[-1])


def is_kernel_dso(dso: str) -> bool:
    return dso.startswith("[kernel") or (dso.startswith("[") and dso.endswith("]") and dso not in USER_PSEUDO_DSOS)


def frame_label(sym: str, dso: str) -> str:
    """FlameGraph conventions: ``name_[k]`` for kernel frames, ``name_[i]`` for inlined calls, ``[dso]``
    for unnamed user code."""
    if sym != UNKNOWN and dso == INLINED_DSO:
        return clean(sym) + INLINE_SUFFIX
    if sym == UNKNOWN:
        if dso and dso not in (UNKNOWN, "unknown"):
            base = dso_base(dso)
            return base if base.startswith("[") else f"[{base}]"
        return UNKNOWN
    name = clean(sym)
    return name + KERNEL_SUFFIX if is_kernel_dso(dso) else name


def raw_label(dso: str, vaddr: int) -> str:
    """Unnamed code kept with its ELF virtual address: ``[mariadbd@0x8a3f12]``."""
    return f"[{dso_base(dso)}@0x{vaddr:x}]"


def parse_raw(label: str) -> tuple[str, int] | None:
    """(dso base, vaddr) of a raw label, else None."""
    m = _RAW.match(label)
    return (m["base"], int(m["addr"], 16)) if m else None


def function_label(base: str, start: int, pause: bool) -> str:
    """An unnamed function: ``[mariadbd+0xde2ac0]`` or ``[mariadbd+0xde2ac0 pause]``."""
    return f"[{clean(base)}+0x{start:x}{' pause' if pause else ''}]"


def parse_function(label: str) -> tuple[str, int, bool] | None:
    """(dso base, start, contains PAUSE) of an unnamed-function label, else None."""
    m = _FUNCTION.match(label)
    return (m["base"], int(m["start"], 16), bool(m["pause"])) if m else None


def is_unnamed(label: str) -> bool:
    """Any bracketed label: [unknown], [dso], raw addresses and unnamed functions."""
    return label.startswith("[") and label.endswith("]")


def is_unresolved_kernel(label: str) -> bool:
    """Kernel code with no name here: ``[kernel.kallsyms]`` (or a raw ``[kernel.kallsyms@0x..]``), what a
    perf.data reads as on a host whose kernel is not the one that recorded it."""
    if not is_unnamed(label):
        return False
    base = label[1:-1].split("@", 1)[0].split("+", 1)[0]
    return base.startswith(("kernel.", "guest.kernel."))


def is_kernel(label: str) -> bool:
    return label.endswith(KERNEL_SUFFIX)


def is_inlined(label: str) -> bool:
    """A call inlined into the frame below it (``name_[i]``): no frame of its own on the machine stack."""
    return label.endswith(INLINE_SUFFIX)


def without_kernel_suffix(label: str) -> str:
    """The name as rules see it: ``_[k]`` (and perf's ``_[j]``/``_[i]``) removed."""
    return _KERNEL.sub("", label)


def process_root(comm: str, pid: int | None = None) -> str:
    """A process's root frame: its comm, or ``comm-pid`` when another kept process has the same comm."""
    name = comm if pid is None else f"{comm}-{pid}"
    return clean(name.replace(" ", "_"))


def thread_root(comm: str, tid: int) -> str:
    """The per-thread frame under a process root (``--per-thread-roots``)."""
    return clean(f"{comm}-{tid}")


def state_label(state: str) -> str:
    """The leaf frame of an off-CPU stack: ``off-cpu:S`` (R, S, D, T, or ``?`` for any other letter)."""
    return OFFCPU_STATE_PREFIX + (state if state in OFFCPU_STATES else "?")


def parse_state(label: str) -> str | None:
    """The state letter of an off-CPU state frame, else None."""
    if label.startswith(OFFCPU_STATE_PREFIX) and label[len(OFFCPU_STATE_PREFIX) :] in OFFCPU_STATES:
        return label[len(OFFCPU_STATE_PREFIX) :]
    return None


def short_blocks_label(min_block_us: int) -> str:
    """The frame standing for blocks under the threshold, which have no stacks: ``[short blocks < 1 ms]``."""
    if min_block_us and min_block_us % 1000 == 0:
        return f"{SHORT_BLOCKS_PREFIX}{min_block_us // 1000} ms]"
    return f"{SHORT_BLOCKS_PREFIX}{min_block_us} us]"


def parse_short_blocks(label: str) -> int | None:
    """The threshold in µs of a short-blocks frame, else None."""
    m = _SHORT.match(label)
    return int(m["n"]) * (1000 if m["unit"] == "ms" else 1) if m else None

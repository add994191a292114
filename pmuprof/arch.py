"""What pmuprof's Python code assumes of x86-64, in one place, and the capture-time check of the host.

native/arch/x86_64.h is the C side. Another architecture is new entries here and a file there
(docs/internals.md, "What an aarch64 port touches"); until then a capture on one stops at once with
one line (`check_capture`, called by `capture.record.check_window`), and `report` of a recording
made elsewhere works as before.
"""

from __future__ import annotations

import os

from .errors import UsageError

# os.uname().machine of the hosts pmuprof captures on: the helper's PAUSE calibration, the off-CPU
# tracer's BPF program and its unwinder, and the PMU event sets are x86-64's.
CAPTURE_MACHINES = ("x86_64",)

# ELF e_machine -> the name run.json gives it (EM_X86_64 = 62).
ELF_MACHINES = {62: "x86_64"}

# The frame-pointer register, as the doctor names it.
FRAME_POINTER_REGISTER = "rbp"

# A function that sets up a frame pointer starts `push %rbp; mov %rsp,%rbp` (55 48 89 e5), after
# `endbr64` (f3 0f 1e fa) when built with CET: what `frame_pointer_ratio` looks for at symbol starts.
FRAME_POINTER_PROLOGUES = (b"\x55\x48\x89\xe5", b"\xf3\x0f\x1e\xfa\x55\x48\x89\xe5")

# User addresses end below this; the kernel's start at it (x86-64's canonical higher half).
KERNEL_START = 0xFFFF800000000000

# Syscall numbers for libc's syscall() where Python has no wrapper (the tests load a BPF program by
# hand with bpf(2)); asm/unistd_64.h.
SYSCALLS = {"bpf": 321}


def elf_machine_name(machine: int) -> str:
    """'x86_64' for EM_X86_64, else 'e_machine=N'."""
    return ELF_MACHINES.get(machine, f"e_machine={machine}")


def check_capture(machine: str | None = None) -> None:
    """Raise one clear UsageError when this host is not one pmuprof captures on."""
    machine = machine if machine is not None else os.uname().machine
    if machine not in CAPTURE_MACHINES:
        raise UsageError(
            f"pmuprof captures on {', '.join(CAPTURE_MACHINES)} only; this host is {machine or 'unknown'}",
            "record here with `perf record -g` and read that perf.data with `pmuprof report`",
        )

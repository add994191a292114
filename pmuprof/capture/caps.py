"""The capabilities this process holds (its effective set): what perf, BPF and /proc checks, not the uid.

A hardened unit runs as root with a CapabilityBoundingSet, so uid 0 says little; a non-root user may
hold CAP_PERFMON. The kernel asks for these (6.18; docs/safety.md "The scheduled units" has how each
was measured):
- perf per-CPU sampling at perf_event_paranoid > 0: CAP_PERFMON (or CAP_SYS_ADMIN: perfmon_capable());
- loading and attaching the off-CPU tracer's tracing programs and its sampler: CAP_BPF and CAP_PERFMON
  (CAP_SYS_ADMIN stands for either: bpf_capable(), perfmon_capable());
- another user's /proc/PID/exe, maps, syscall, mem and process_vm_readv: CAP_SYS_PTRACE, with
  CAP_DAC_READ_SEARCH for the 0400/0500/0600 entries (syscall, fd, mem) and the server's error log;
- kernel symbol addresses in /proc/kallsyms: CAP_SYSLOG;
- /proc/PID/task/TID/stack (threads' kernel stacks in threads.json): CAP_SYS_ADMIN.
"""

from __future__ import annotations

from pathlib import Path

# name -> bit (linux/capability.h)
BITS = {
    "CAP_DAC_READ_SEARCH": 2,
    "CAP_SYS_PTRACE": 19,
    "CAP_SYS_ADMIN": 21,
    "CAP_SYSLOG": 34,
    "CAP_PERFMON": 38,
    "CAP_BPF": 39,
}
STATUS = Path("/proc/self/status")


def parse_status(text: str) -> frozenset[str]:
    """The names of BITS set in a /proc/PID/status CapEff line (none when the line is missing)."""
    for line in text.splitlines():
        if line.startswith("CapEff:"):
            value = int(line.split(":", 1)[1].strip(), 16)
            return frozenset(name for name, bit in BITS.items() if value >> bit & 1)
    return frozenset()


def effective() -> frozenset[str]:
    """This process's effective capabilities among BITS."""
    try:
        return parse_status(STATUS.read_text(encoding="ascii", errors="replace"))
    except OSError:
        return frozenset()


def perfmon_capable(caps: frozenset[str]) -> bool:
    """The kernel's perfmon_capable(): per-CPU sampling and kernel stacks whatever perf_event_paranoid says."""
    return bool(caps & {"CAP_PERFMON", "CAP_SYS_ADMIN"})


def bpf_missing(caps: frozenset[str]) -> tuple[str, ...]:
    """What loading the off-CPU tracer lacks: its tracing programs need bpf_capable() and perfmon_capable()."""
    if "CAP_SYS_ADMIN" in caps:
        return ()
    return tuple(name for name in ("CAP_BPF", "CAP_PERFMON") if name not in caps)


# What a capture loses without each capability beyond perf's and the tracer's (doctor's wording).
LOSSES = {
    "CAP_SYS_PTRACE": "another user's server: no binary (/proc/PID/exe), build-id, socket discovery or "
    "/proc/PID/mem reads, and the tracer reads no user stacks of blocked threads",
    "CAP_DAC_READ_SEARCH": "another user's /proc/PID/fd, /proc/PID/mem and /proc/TID/syscall (the user stack of "
    "a thread blocked through the capture), and the server's error log (0640 mysql:adm)",
    "CAP_SYSLOG": "kernel symbol addresses: kernel frames stay unnamed",
}

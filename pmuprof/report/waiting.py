"""Whether an on-CPU-only capture saw a server mostly off the CPU, and the command that records where it waits."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from collections.abc import Sequence

from ..model.profile import Profile
from ..model.server import ServerFacts

MOSTLY_OFF = 0.5  # fewer than half of the executing sessions on a CPU, on average: mostly waiting
MIN_SESSIONS = 2  # one session off the CPU is a client's think time, not a server that waits
EXECUTING = ("Query", "Execute")  # processlist commands of a session running a statement


@dataclass(frozen=True)
class Waiting:
    """The first screen's note: sessions executing, CPUs they used on average, the command to run."""

    sessions: int
    busy_cpus: float
    command: str

    def sentence(self) -> str:
        return (
            f"{self.sessions} sessions were executing statements, but the server used only "
            f"{self.busy_cpus:.2f} CPUs on average: its threads were mostly off the CPU (waiting), "
            "which on-CPU samples do not show. To see where they wait, run:"
        )


def executing_sessions(server: ServerFacts | None) -> int | None:
    """Sessions running a statement: the processlist's Query/Execute rows, else Threads_running (less ours)."""
    if server is None or not server.reachable:
        return None
    if server.processlist is not None and server.processlist.commands:
        return sum(n for cmd, n in server.processlist.commands.items() if cmd in EXECUTING)
    running = server.status.after.get("Threads_running", server.status.before.get("Threads_running"))
    try:
        return max(int(running) - 1, 0)
    except (TypeError, ValueError):
        return None


def off_cpu_command(command: Sequence[str], pids: Sequence[int]) -> str:
    """The capture's own command line with --off-cpu (``pmuprof capture -p PID --off-cpu`` when unknown)."""
    argv = [a for a in command if a != "--no-off-cpu"]
    if len(argv) < 2 or argv[1] not in ("capture", "record"):
        argv = ["pmuprof", "capture"] + [x for pid in pids for x in ("-p", str(pid))]
    if "--off-cpu" not in argv:
        argv.append("--off-cpu")
    return shlex.join(argv)


def waiting(profile: Profile) -> Waiting | None:
    """The note, when off-CPU time was not recorded and the executing sessions were mostly off the CPU."""
    run = profile.run
    if run.offcpu is not None and run.offcpu.recorded:
        return None
    freq, seconds = run.record.frequency, run.duration_s
    sessions = executing_sessions(profile.server)
    if not freq or not seconds or sessions is None or sessions < MIN_SESSIONS:
        return None
    busy = profile.total / (freq * seconds)
    if busy >= MOSTLY_OFF * sessions:
        return None
    return Waiting(sessions, round(busy, 2), off_cpu_command(run.command, [t.pid for t in run.targets]))

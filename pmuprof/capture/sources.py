"""The capture's sources, in the order they start (perf's window starts after them all; capture/lifecycle.py).

A source is a ``lifecycle.Source`` made by one of these from the capture's Context (None: it does not
apply, e.g. server sources under --no-mysql). Per-second sources (``persecond.PerSecond``) stop right
after perf's window wherever they are listed; the others stop in reverse order, so the archive, listed
first, is the last to read perf.data; the server counters stop after the processlist poller, whose own
statements they take out. A new source is its module and one line here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .lifecycle import Context, Source
from .mysql.poll import Processlist
from .mysql.serverfacts import ServerFacts
from .mysql.status import ServerCounters
from .offcpu.source import OffCpu
from .proc.archive import Archive
from .proc.cpuusers import CpuUsers
from .proc.hostload import HostLoad

SOURCES: list[Callable[[Context], Source | None]] = [
    Archive.of,  # kernel symbols and sampled binaries, once perf.data is closed
    ServerFacts.of,  # mysql.json: variables, status over the first seconds, SEMAPHORES, processlist states
    OffCpu.of,  # the off-CPU tracer inside perf's window, folded when it stops
    ServerCounters.of,  # status.json and status.*: the server's counters once a second, InnoDB at both ends
    Processlist.of,  # processlist.tsv and processlist.active, once a second
    HostLoad.of,  # run.json host_load and host.*, once a second
    CpuUsers.of,  # run.json cpu_users: every process's and cgroup's CPU time over the window
]


def make(ctx: Context, extra: Sequence[Source] = ()) -> list[Source]:
    """The sources this capture runs: the registry's that apply, then ``extra`` (a caller's own, e.g. watch's)."""
    return [s for s in (make_one(ctx) for make_one in SOURCES) if s is not None] + list(extra)

"""What a capture is asked to do: the options record() and every capture source read."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class RecordOptions:
    pids: tuple[int, ...]
    out_dir: Path
    duration: float = 30.0
    frequency: int = 99
    call_graph: str = "fp"
    mode: str = "per-cpu"
    event: str = "cycles"
    mysql: bool = True
    mysql_options: object | None = None  # pmuprof.capture.mysql.facts.MysqlOptions
    per_thread_roots: bool = False
    keep_perf_data: bool = True
    # also sum off-CPU time per stack in the kernel (BPF; root only); None: where it is cheap (capture/offcpu AUTO)
    off_cpu: bool | None = False
    command: tuple[str, ...] = field(default_factory=lambda: tuple(sys.argv))
    share: bool = False  # the run directory readable by other users, without kernel addresses or statements

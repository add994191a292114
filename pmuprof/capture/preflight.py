"""What is checked before a capture starts anything: the window's options, the output directory, free disk
above the reserve, and a perf that works (watch checks the window up front too)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .. import arch, outfile, rundir_create
from ..errors import PerfError, ResourceError, UsageError
from ..packages import apt_install
from ..paths import perf_path
from .options import RecordOptions
from .proc import host

MAX_DURATION_S = 3600


def check_window(duration: float, frequency: int, call_graph: str = "fp") -> None:
    """The options of one capture window, checked before anything starts (watch checks them up front)."""
    arch.check_capture()  # the one capture-time architecture check: every capture passes here first
    if not 0 < duration <= MAX_DURATION_S:
        raise UsageError(f"--duration {duration:g} s is out of range", f"use up to {MAX_DURATION_S} s (1 h)")
    if not 1 <= frequency <= 10000:
        raise UsageError(f"--frequency {frequency} is out of range", "use 1..10000 Hz (99 is the low-overhead default)")
    if call_graph == "lbr" and not host.has_lbr():
        raise PerfError(
            "--call-graph lbr needs Intel's Last Branch Record, which this CPU does not expose "
            "(no PMU 'branches' capability)",
            "use --call-graph fp, or dwarf for binaries without frame pointers",
        )


def validate(opts: RecordOptions) -> None:
    if not opts.pids:
        raise UsageError("no target process", "pass -p PID (repeatable) or --all-mysqld")
    check_window(opts.duration, opts.frequency, opts.call_graph)
    rundir_create.check_new(opts.out_dir)


def _existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_disk(out_dir: Path, need: int) -> tuple[int, int]:
    """(free bytes, reserve) of the filesystem that will hold ``out_dir``; refuse to start when the
    estimated perf.data does not fit above the reserve (perf is also stopped at the reserve)."""
    probe = _existing(out_dir)
    try:
        usage, flags = shutil.disk_usage(probe), os.statvfs(probe).f_flag
    except OSError as err:
        raise outfile.os_error(err, probe, "check free space on") from err
    if flags & os.ST_RDONLY:
        raise ResourceError(f"cannot write in {probe}: read-only filesystem", "choose -o on a writable filesystem")
    reserve = outfile.disk_reserve(usage.total)
    if usage.free - reserve < need:
        raise ResourceError(
            f"not enough free disk in {probe}: {usage.free / 2**20:.0f} MiB free; this capture needs about "
            f"{need / 2**20:.0f} MiB for perf.data and pmuprof keeps {reserve / 2**20:.0f} MiB free (2 % of the "
            f"filesystem, at least 16 MiB) so the disk never fills",
            "free space, lower --duration/--frequency, use --call-graph fp, or pass -o on a larger filesystem",
        )
    return usage.free, reserve


def preflight(opts: RecordOptions) -> tuple[str, dict]:
    perf = perf_path()
    if not perf or not (os.path.isfile(perf) or shutil.which(perf)):
        raise PerfError("perf is not installed", f"{apt_install('perf')} (or set PMUPROF_PERF to a perf binary)")
    facts = host.facts(perf)
    if not facts["perf_version"]:
        raise PerfError(
            f"{perf} does not work: `perf version` gave no version (it hung, crashed, or is not perf)",
            "check PMUPROF_PERF, or reinstall linux-perf; `pmuprof doctor` shows it",
        )
    return perf, facts  # perf itself says when perf_event_paranoid forbids it (runner classifies)

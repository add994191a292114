"""Run perf script / evlist / header on a perf.data and fold the stacks (fast C folder when built)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from ...errors import InputError, PerfError
from ..native.fold import fold_perf_script_process
from ...model.perfscript import FoldResult
from . import argv as perfcmd, parse as perfparse


def _run(argv: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, capture_output=True, text=True, errors="backslashreplace", timeout=timeout)
    except FileNotFoundError as err:
        raise PerfError(f"cannot run {argv[0]}: not found",
                        "apt-get install linux-perf, or give report a folded / perf script file") from err


def recorded_events(perf: str, data: Path) -> list[dict]:
    res = _run(perfcmd.evlist_argv(perf, data))
    if res.returncode != 0:
        raise InputError(f"{data}: perf cannot read this file ({_first(res.stderr)})",
                         "the perf.data is corrupt or truncated; re-record, or pass its perf script text")
    return perfparse.parse_evlist(res.stdout)


def header(perf: str, data: Path) -> dict:
    """A few facts from the perf.data header (host, CPU, perf version, command line)."""
    res = _run(perfcmd.header_argv(perf, data))
    facts: dict[str, str] = {}
    for line in res.stdout.splitlines():
        if line.startswith("# ") and " : " in line:
            key, _, value = line[2:].partition(" : ")
            facts[key.strip()] = value.strip()
    keep = {"hostname": "hostname", "os release": "kernel", "perf version": "perf_version",
            "cpudesc": "cpu_model", "cmdline": "cmdline", "nrcpus avail": "nproc", "captured on": "captured_on"}
    return {out: facts[k] for k, out in keep.items() if k in facts}


def fold_perf_data(perf: str, data: Path, pids: tuple[int, ...] = (), comms: tuple[str, ...] = (),
                   per_thread: bool = False, names: dict[int, str] | None = None,
                   raw_unknown: bool = False) -> tuple[FoldResult, list[str]]:
    """perf script piped into the folder (pmuprof-fold, or the Python Folder when it is not built).

    Returns (result, argv used). Process filtering is left to the folder (perf's --comms would
    drop renamed threads).
    """
    argv = perfcmd.script_argv(perf, data, pids)
    return fold_perf_script_process(argv, pids=pids, comms=comms, per_thread=per_thread, names=names,
                                    raw_unknown=raw_unknown), argv


def _first(text: str) -> str:
    return next((l.strip() for l in text.splitlines() if l.strip()), "no message")[:300]

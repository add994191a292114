"""Run perf script / evlist / header on a perf.data and fold the stacks (fast C folder when built)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from ..errors import InputError, PerfError
from ..model.perfscript import Folder, FoldResult
from . import perfcmd, perfparse


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
                   raw_unknown: bool = False, call_chains: bool = True) -> tuple[FoldResult, list[str]]:
    """perf script → folded stacks, streaming. Returns (result, argv used).

    Process filtering is left to the folder (perf's --comms would drop renamed threads).
    """
    argv = perfcmd.script_argv(perf, data, pids)
    try:
        from .. import fastfold  # the C folder, when built
    except ImportError:
        fastfold = None
    if not call_chains:  # one-line samples (recorded without -g): the Python folder reads them
        fastfold = None
    if fastfold is not None:
        kwargs = {"raw_unknown": True} if raw_unknown else {}
        try:
            return fastfold.fold_perf_script_process(argv, pids=pids, comms=comms, per_thread=per_thread,
                                                     names=names, **kwargs), argv
        except TypeError:  # this folder build cannot keep raw addresses: fold in Python
            pass
    return _fold_python(argv, pids, comms, per_thread, names, raw_unknown), argv


def _fold_python(argv: list[str], pids, comms, per_thread, names=None, raw_unknown=False) -> FoldResult:
    folder = Folder(pids, comms, per_thread, names, raw_unknown)
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL) as proc:
        assert proc.stdout is not None
        for raw in proc.stdout:
            folder.feed(raw.decode("utf-8", "backslashreplace"))
        stderr = proc.stderr.read().decode("utf-8", "backslashreplace") if proc.stderr else ""
        proc.wait()
    if proc.returncode != 0 and folder.result.kept == 0:
        raise InputError(f"perf script failed: {_first(stderr)}",
                         "the perf.data is corrupt or truncated; re-record, or pass its perf script text")
    return folder.finish()


def _first(text: str) -> str:
    return next((l.strip() for l in text.splitlines() if l.strip()), "no message")[:300]

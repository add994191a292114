"""Fold a perf.data with pmuprof-perfdata (no perf script); says when perf script must do it instead."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from collections.abc import Iterable, Sequence

from ...errors import PmuprofError
from ...model.perfscript import FoldResult
from ...paths import native_path
from .. import proc as proc_tools
from ..perf.repair import corrupt_header
from .fold import SCRIPT_MAX_S, STACKS_BIN, FoldError, _first_line, _result, fold_argv

UNSUPPORTED = 3  # the file needs something only perf script does (DWARF unwinding, kcore, modules, ...)
CORRUPT = 4  # truncated or corrupt: perf script may still read part of it
BAD_HEADER = 5  # a header no file can match: perf script loops on it, so it is not tried


class PerfdataFallback(PmuprofError):
    """pmuprof-perfdata declined this file; ``reason`` says why. Fold it with perf script instead."""

    def __init__(self, reason: str, status: int) -> None:
        super().__init__(
            f"pmuprof-perfdata cannot read this perf.data natively: {reason}", "folding it through perf script instead"
        )
        self.reason = reason
        self.status = status


@dataclass(frozen=True)
class DsoSymbols:
    """Where one DSO's symbols came from (None: not found, or the build-id did not match)."""

    path: str
    build_id: str | None
    found_at: str | None
    matched: bool
    symbols: int
    tree_lookups: int  # lookups where overlapping symbols made perf's tree shape decide


@dataclass(frozen=True)
class PerfdataFold:
    """The folded result, plus what the reader saw: DSOs and how many samples / lost events."""

    result: FoldResult
    dsos: tuple[DsoSymbols, ...]
    samples: int
    lost: int


def perfdata_path() -> Path | None:
    """pmuprof-perfdata ($PMUPROF_PERFDATA, the package's bin/, the checkout's build, or PATH)."""
    return native_path("pmuprof-perfdata", "PMUPROF_PERFDATA")


def inline_wanted() -> bool:
    """Whether user frames get their DWARF inline chains when pmuprof-perfdata reads a perf.data here (on
    unless ``PMUPROF_NO_INLINE=1``)."""
    return os.environ.get("PMUPROF_NO_INLINE", "") in ("", "0")


def expands_inline(reader_argv: Sequence[str]) -> bool:
    """Whether the command that read a perf.data (analysis.json's ``reader_argv``) gave user frames their
    inline chains: only pmuprof-perfdata's ``--inline`` does (perf script runs with ``--no-inline``)."""
    return "--inline" in reader_argv


def perfdata_argv(
    binary: Path,
    data: Path,
    meta: Path,
    pids: Iterable[int] = (),
    comms: Iterable[str] = (),
    per_thread: bool = False,
    names: dict[int, str] | None = None,
    raw_unknown: bool = False,
    stacks_bin: Path | None = None,
    timed: bool = False,
    inline: bool = True,
    kallsyms: Path | None = None,
    callers: Path | None = None,
) -> list[str]:
    """pmuprof-perfdata's command line (pure): pmuprof-fold's options, then the perf.data (``timed``:
    as perf script with the time field, which gives the sample table its seconds; ``inline``: user frames
    of binaries with DWARF expand into their inline chains, ``name_[i]`` frames; ``kallsyms``: the kernel's
    symbols from that file, as perf script --kallsyms; ``callers``: recovered-callers.tsv, the callers the
    frame-pointer walk skipped under a library leaf, put back). Processes are also known by their main
    thread's COMM and the binaries they map (``--process-names``): servers rename their threads."""
    argv = fold_argv(binary, meta, pids, comms, per_thread, names, raw_unknown, stacks_bin)
    argv += ["--kallsyms", str(kallsyms)] if kallsyms is not None else []
    argv += ["--callers", str(callers)] if callers is not None else []
    return argv + (["--time"] if timed else []) + (["--inline"] if inline else []) + ["--process-names", str(data)]


def fold_perf_data_native(
    data: Path,
    pids: Iterable[int] = (),
    comms: Iterable[str] = (),
    per_thread: bool = False,
    names: dict[int, str] | None = None,
    raw_unknown: bool = False,
    binary: Path | None = None,
    timed: bool = False,
    inline: bool = True,
    kallsyms: Path | None = None,
    callers: Path | None = None,
) -> PerfdataFold:
    """What ``perf script -F comm,pid,tid,ip,sym,symoff,dso --no-inline [--pid=...] | pmuprof-fold`` gives,
    plus (``inline``) the calls DWARF says are inlined at each user frame, which perf script leaves out.

    Raises PerfdataFallback when the binary is missing or declines the file, InputError when its header
    proves it corrupt (nothing else is to try it), FoldError when it fails.
    """
    binary = binary or perfdata_path()
    if binary is None:
        raise PerfdataFallback("pmuprof-perfdata is not built (make -C native)", UNSUPPORTED)
    with tempfile.TemporaryDirectory(prefix="pmuprof-perfdata-") as tmp:
        meta = Path(tmp) / "meta.json"
        argv = perfdata_argv(
            binary,
            Path(data),
            meta,
            tuple(pids),
            comms,
            per_thread,
            names,
            raw_unknown,
            Path(tmp) / STACKS_BIN,
            timed,
            inline,
            kallsyms,
            callers,
        )
        with open(Path(tmp) / "stacks.folded", "w+b") as out, open(Path(tmp) / "err", "w+b") as err:
            proc = _run_watched(argv, out, err)
            if proc.returncode in (UNSUPPORTED, CORRUPT, BAD_HEADER):
                err.seek(0)
                reason = _first_line(err.read())
                if proc.returncode == BAD_HEADER:
                    raise corrupt_header(Path(data), reason.removeprefix("pmuprof-perfdata: error: "))
                raise PerfdataFallback(reason, proc.returncode)
            result = _result(proc.returncode, out, err, meta)
            err.seek(0)
            result = replace(result, notes=_warnings(err.read()))
        extra = json.loads(meta.read_text(encoding="utf-8"))
        exes = {int(pid): str(path) for pid, path in (extra.get("exes") or {}).items() if str(pid).isdigit()}
        result = replace(result, recovered_callers=extra.get("perf_data", {}).get("recovered_samples", 0), exes=exes)
    return PerfdataFold(
        result=result,
        dsos=tuple(DsoSymbols(**d) for d in extra.get("dsos", [])),
        samples=extra.get("perf_data", {}).get("samples", 0),
        lost=extra.get("perf_data", {}).get("lost", 0),
    )


def _warnings(raw: bytes) -> tuple[str, ...]:
    """The reader's "pmuprof-perfdata: warning: ..." lines (files it would not read), without the prefix."""
    prefix = "pmuprof-perfdata: warning: "
    text = raw.decode("utf-8", "backslashreplace")
    return tuple(dict.fromkeys(ln[len(prefix) :][:300] for ln in text.splitlines() if ln.startswith(prefix)))[:20]


def _run_watched(argv: list[str], out, err) -> subprocess.Popen:
    """The reader, killed when it uses no CPU for stall_s() or runs past SCRIPT_MAX_S (FoldError then)."""
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
    try:
        with proc_tools.Watchdog((proc,), proc_tools.stall_s(), SCRIPT_MAX_S) as dog:
            proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if dog.fired:
        raise FoldError(
            f"pmuprof-perfdata {dog.fired}: stopped",
            "report the perf.data again, or set PMUPROF_PERFDATA= to read it through perf script",
        )
    return proc


__all__ = [
    "BAD_HEADER",
    "CORRUPT",
    "UNSUPPORTED",
    "DsoSymbols",
    "FoldError",
    "PerfdataFallback",
    "PerfdataFold",
    "expands_inline",
    "fold_perf_data_native",
    "inline_wanted",
    "perfdata_argv",
    "perfdata_path",
]

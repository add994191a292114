"""The run directory (the contract between record and report): file names, typed readers, the one writer."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TypeVar

from ..errors import InputError
from .analysis import Analysis
from .counters import Counters
from .folded import load_folded
from .jsontypes import from_json, to_json
from .profile import Leaf, Profile
from .run import Run, Source
from .server import ServerFacts

RUN_JSON = "run.json"
STACKS = "stacks.folded"
COUNTERS = "counters.json"
MYSQL = "mysql.json"
ANALYSIS = "analysis.json"  # processes, binaries, unnamed functions, skid hot spots, stack quality
PERF_DATA = "perf.data"
LEAVES = "leaves.tsv"  # count \t dso \t symbol \t hex offset : leaf IPs for skid correction
STAT_CSV = "perf-stat.csv"  # perf stat -x, output
RECORD_LOG = "perf-record.log"  # perf record's stderr
STAT_LOG = "perf-stat.log"  # perf stat's stderr
REPORT_HTML = "report.html"
FINDINGS_JSON = "findings.json"
REPORT_MD = "report.md"
OFFCPU = "offcpu.folded"  # off-CPU stacks, counts in microseconds, leaf frame = thread state
THREADS = "threads.json"  # threads grouped by stack at the capture's start and end (model.offcpu.Threads)
OFFCPU_RAW = "offcpu.out"  # pmuprof-offcpu's own output (addresses), kept for the record
OFFCPU_LOG = "offcpu.log"  # pmuprof-offcpu's stderr
CONTROL_FIFOS = (".perf-ctl", ".perf-ack")  # perf's control FIFOs during a capture
# Every name pmuprof writes in a run directory (0.1's skid.json / symbols.json included): retention
# deletes these and nothing else.
RUN_FILES = frozenset({
    RUN_JSON, STACKS, COUNTERS, MYSQL, ANALYSIS, PERF_DATA, LEAVES, STAT_CSV, RECORD_LOG, STAT_LOG,
    REPORT_HTML, FINDINGS_JSON, REPORT_MD, OFFCPU, THREADS, OFFCPU_RAW, OFFCPU_LOG, *CONTROL_FIFOS, "skid.json",
    "symbols.json", "perf.data.old",
    "workload.log", "diff.html", "diff.json", "profile.pb.gz", "profile.speedscope.json", "flame.svg",
})
MAX_JSON_BYTES = 256 * 2**20  # a contract file larger than this is not pmuprof's

T = TypeVar("T")


def is_run_dir(path: Path) -> bool:
    return path.is_dir() and (path / RUN_JSON).is_file()


def read_json(path: Path, default: Any = None) -> Any:
    """Parsed JSON, ``default`` when the file is absent; a damaged file is one InputError line."""
    if not path.is_file():
        return default
    if path.stat().st_size > MAX_JSON_BYTES:
        raise InputError(f"{path}: larger than {MAX_JSON_BYTES >> 20} MiB, not a pmuprof file", "check the path")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as err:
        why = "nested too deeply" if isinstance(err, RecursionError) else str(err)
        raise InputError(f"{path}: not valid JSON ({why})",
                         "the run directory is damaged; `pmuprof report` rebuilds what it can from perf.data") from err


def read_typed(path: Path, cls: type[T], default: T | None = None) -> T | None:
    """A contract file parsed into its frozen type (``default`` when absent)."""
    data = read_json(path, None)
    if data is None:
        return default
    try:
        return from_json(cls, _upgrade(cls, data))
    except TypeError as err:
        raise InputError(f"{path}: {err}", "the file is damaged or not pmuprof's; re-run pmuprof record") from err


def _upgrade(cls: type, data: Any) -> Any:
    """Read 0.1's run.json (schema 1): "mode" was also the cgroup flag."""
    if cls is Run and isinstance(data, dict) and data.get("mode") == "cgroup":
        return {**data, "mode": "per-cpu"}
    return data


def write_json(path: Path, data: Any) -> None:
    """Write JSON atomically: a temp file in the same directory renamed over ``path`` (never a foreign file)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def write_typed(path: Path, obj: Any) -> None:
    """The one writer of run.json, counters.json, mysql.json and analysis.json."""
    write_json(path, to_json(obj))


def read_leaves(path: Path) -> tuple[Leaf, ...]:
    if not path.is_file():
        return ()
    out = []
    with open(path, encoding="utf-8", errors="backslashreplace") as fh:
        for line in fh:
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 4 and parts[0].isdigit():
                try:
                    out.append(Leaf(parts[1], parts[2], int(parts[3], 16), int(parts[0])))
                except ValueError:
                    continue
    return tuple(out)


def write_leaves(path: Path, leaves: dict[tuple[str, str, int], int]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for (dso, sym, off), count in sorted(leaves.items(), key=lambda kv: (-kv[1], kv[0])):
            fh.write(f"{count}\t{dso}\t{sym}\t{off:x}\n")


def read_run(path: Path) -> Run:
    return read_typed(path / RUN_JSON, Run, None) or Run(source=Source(kind="rundir", path=str(path)))


def read_facts(path: Path) -> tuple[Counters, ServerFacts | None, Analysis | None]:
    """counters.json, mysql.json and analysis.json of a run directory (each optional)."""
    counters = read_typed(path / COUNTERS, Counters, Counters()) or Counters()
    return counters, read_typed(path / MYSQL, ServerFacts, None), read_typed(path / ANALYSIS, Analysis, None)


def load_run_dir(path: Path) -> Profile:
    """An analysed run directory (stacks.folded present) as a Profile."""
    stacks_path = path / STACKS
    if not stacks_path.is_file():
        raise InputError(f"{path}: no {STACKS} in this run directory", "re-run pmuprof record, or pass the perf.data")
    stacks, _ = load_folded(stacks_path)
    counters, server, analysis = read_facts(path)
    return Profile(stacks, read_run(path), counters, server, analysis or Analysis(), read_leaves(path / LEAVES), str(path))

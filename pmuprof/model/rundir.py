"""Run-directory file names and loading (the contract between record and report)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import InputError
from .folded import load_folded
from .profile import Leaf, Profile

RUN_JSON = "run.json"
STACKS = "stacks.folded"
COUNTERS = "counters.json"
MYSQL = "mysql.json"
PERF_DATA = "perf.data"
LEAVES = "leaves.tsv"  # count \t dso \t symbol \t hex offset : leaf IPs for skid correction
SKID = "skid.json"  # helper's raw/corrected per-instruction histograms for the hottest functions
SYMBOLS = "symbols.json"  # unnamed-function groups for stripped binaries
STAT_CSV = "perf-stat.csv"  # perf stat -x, output
RECORD_LOG = "perf-record.log"  # perf record's stderr
STAT_LOG = "perf-stat.log"  # perf stat's stderr
REPORT_HTML = "report.html"
FINDINGS_JSON = "findings.json"
REPORT_MD = "report.md"


def is_run_dir(path: Path) -> bool:
    return path.is_dir() and (path / RUN_JSON).is_file()


def read_json(path: Path, default: Any = None) -> Any:
    if not path.is_file():
        return default
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise InputError(f"{path}: not valid JSON ({err})", "the run directory is damaged; re-run pmuprof record") from err


def write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def read_leaves(path: Path) -> tuple[Leaf, ...]:
    if not path.is_file():
        return ()
    out = []
    with open(path, encoding="utf-8", errors="backslashreplace") as fh:
        for line in fh:
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 4 and parts[0].isdigit():
                out.append(Leaf(parts[1], parts[2], int(parts[3], 16), int(parts[0])))
    return tuple(out)


def write_leaves(path: Path, leaves: dict[tuple[str, str, int], int]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for (dso, sym, off), count in sorted(leaves.items(), key=lambda kv: (-kv[1], kv[0])):
            fh.write(f"{count}\t{dso}\t{sym}\t{off:x}\n")


def load_run_dir(path: Path) -> Profile:
    """Load a run directory; stacks.folded is required, the rest is optional."""
    run = read_json(path / RUN_JSON, {}) or {}
    stacks_path = path / STACKS
    if not stacks_path.is_file():
        raise InputError(f"{path}: no {STACKS} in this run directory", "re-run pmuprof record, or pass the perf.data")
    stacks, _ = load_folded(stacks_path)
    mysql = read_json(path / MYSQL, None)
    counters = read_json(path / COUNTERS, {}) or {}
    return Profile(stacks, run, counters, mysql, read_leaves(path / LEAVES), str(path))

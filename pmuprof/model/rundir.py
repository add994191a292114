"""The run directory (the contract between record and report): file names, typed readers, the one writer."""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import fields
from pathlib import Path
from typing import Any, TypeVar
from collections.abc import Callable

from .. import infile, outfile
from ..errors import InputError, UsageError
from .analysis import Analysis, SkidFunction
from .counters import Counters
from .folded import load_folded
from .jsontypes import from_json, to_json
from . import processlist
from .offcpu import OffCpuProfile, Threads
from .profile import Leaf, Profile
from .run import Run, Source
from .samples import BadTable, Samples, read_tsv
from .series import SeriesSet
from .status import ServerStatus
from .activity import Activity
from .stacks import Stacks
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
REPORT_FILES = (REPORT_HTML, FINDINGS_JSON, REPORT_MD, "flame.svg")
OFFCPU = "offcpu.folded"  # off-CPU stacks, counts in microseconds, leaf frame = thread state
THREADS = "threads.json"  # threads grouped by stack at the capture's start and end (model.offcpu.Threads)
OFFCPU_RAW = "offcpu.out"  # pmuprof-offcpu's own output (addresses), kept for the record
OFFCPU_LOG = "offcpu.log"  # pmuprof-offcpu's stderr
RECOVERED_CALLERS = "recovered-callers.tsv"  # callers perf's walk skips under a library leaf (model/callers.py)
SAMPLES = "samples.tsv"  # samples per (stacks.folded line, thread id, second): model/samples.py
KALLSYMS = "kallsyms.gz"  # the recording boot's kernel text symbols (model.run.KernelSymbols)
BINARIES = "binaries.tar.gz"  # the targets' sampled user binaries, by build-id (model.run.KeptBinaries)
PROCESSLIST = "processlist.tsv"  # the processlist polled once a second during the capture (capture/mysql/poll.py)
SERIES = "series.json"  # the capture sources' per-second values (model/series.py)
STATUS = "status.json"  # the server's counters once a second and its InnoDB state (model/status.py)
WATCH_POLLS = "watch-polls.tsv"  # a watch capture's trigger polls before and during it (model/watchpolls.py)
CONTROL_FIFOS = (".perf-ctl", ".perf-ack")  # perf's control FIFOs during a capture
ROOM = ".pmuprof-room"  # space held during a capture for its last files (capture/diskroom.py)
# Every name pmuprof writes in a run directory (0.1's skid.json / symbols.json included): retention
# deletes these and nothing else.
RUN_FILES = frozenset(
    {
        RUN_JSON,
        STACKS,
        COUNTERS,
        MYSQL,
        ANALYSIS,
        PERF_DATA,
        LEAVES,
        STAT_CSV,
        RECORD_LOG,
        STAT_LOG,
        REPORT_HTML,
        FINDINGS_JSON,
        REPORT_MD,
        OFFCPU,
        THREADS,
        OFFCPU_RAW,
        OFFCPU_LOG,
        SAMPLES,
        PROCESSLIST,
        KALLSYMS,
        BINARIES,
        WATCH_POLLS,
        SERIES,
        STATUS,
        RECOVERED_CALLERS,
        *CONTROL_FIFOS,
        ROOM,
        "skid.json",
        "symbols.json",
        "perf.data.old",
        "workload.log",
        "diff.html",
        "diff.json",
        "diff.md",
        "profile.pb.gz",
        "profile.speedscope.json",
        "flame.svg",
    }
)
MAX_JSON_BYTES = 256 * 2**20  # a contract file larger than this is not pmuprof's

T = TypeVar("T")


def is_run_dir(path: Path) -> bool:
    return path.is_dir() and (path / RUN_JSON).is_file()


RECEIVED_FIX = "copy it where only you and root can change it (cp -r DIR /var/tmp/NAME) and report the copy"


def check_received(path: Path) -> None:
    """Refuse (one line) a run directory another user could change while pmuprof reads it: it, or a directory
    on its way, is that user's, or group or others may write it (a run directory is evidence: its files are
    then checked one by one, ``readable``, and never written)."""
    why = infile.private_dir_problem(path)
    if why:
        raise InputError(
            f"{path}: not read: {why}, so another user could change this run directory while pmuprof reads it",
            RECEIVED_FIX,
        )


def kept_file(run_dir: Path | None, name: str, expected: str, notes: list[str] | None = None) -> Path | None:
    """The file run.json says the capture kept (kallsyms.gz, binaries.tar.gz) when it is there to be read:
    only its contract name, never another path run.json names (None, with a note, for anything else)."""
    if run_dir is None or not name:
        return None
    if name != expected:
        if notes is not None:
            notes.append(f"run.json names {name!r} where the capture keeps {expected}: not read")
        return None
    path = run_dir / expected
    return path if readable(path, notes) else None


def readable(path: Path, notes: list[str] | None = None) -> bool:
    """Whether a run directory's file is there to be read: a regular file of this user or root. One that is
    not (a symbolic link, a FIFO, another user's file) is not read, with a note in ``notes``."""
    why = infile.evidence_problem(path)
    if why:
        if notes is not None:
            notes.append(f"{path.name}: {why}: left out of the report")
        return False
    return os.path.lexists(path)


def _no_constant(name: str) -> Any:
    """NaN and Infinity are not JSON (Python's json reads them): no pmuprof file holds them, and a number
    that compares false to everything would reach the writers."""
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    """A JSON number as a float; one too large for a float (1e999) is not a number pmuprof wrote."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is out of range for a number")
    return value


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _check_text(text: str, data: Any) -> None:
    """A lone UTF-16 surrogate (``"\\ud800"``) parses into a str no writer can encode: not text."""
    if _SURROGATE_ESCAPE.search(text):
        try:
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as err:
            raise ValueError("a lone UTF-16 surrogate (\\ud800-\\udfff) is not text") from err


def _read_bytes(path: Path, max_bytes: int) -> bytes | None:
    """A run-directory file's bytes (None when absent): opened without following a link, only a regular
    file of this user or root (infile.open_evidence); anything else is one InputError line."""
    try:
        fd = infile.open_evidence(path, max_bytes)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except infile.Refused as err:
        raise InputError(
            f"{path}: {err.why}: not read", "the file is not pmuprof's: restore it, or record again"
        ) from err
    except OSError as err:
        raise InputError(f"{path}: cannot be read ({os.strerror(err.errno or 0)})", "check the path") from err
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def read_json(path: Path, default: Any = None) -> Any:
    """Parsed JSON, ``default`` when the file is absent; a damaged file, or one that is not a regular file of
    this user or root, is one InputError line."""
    raw = _read_bytes(path, MAX_JSON_BYTES)
    if raw is None:
        return default
    try:
        text = raw.decode("utf-8")
        data = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
        _check_text(text, data)
        return data
    except (ValueError, UnicodeDecodeError, RecursionError) as err:
        why = "nested too deeply" if isinstance(err, RecursionError) else str(err)
        raise InputError(f"{path}: not valid JSON ({why})", "the file is damaged: restore it, or record again") from err


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


def write_json(path: Path, data: Any, compact: bool = False) -> None:
    """Write JSON atomically through outfile (a temp file renamed over ``path``; never through a link);
    ``compact``: one line (series.json: a value a line would be most of the file)."""
    text = json.dumps(
        data,
        indent=None if compact else 2,
        separators=(",", ":") if compact else None,
        sort_keys=True,
        ensure_ascii=False,
    )
    outfile.write_text(path, text + "\n")


def write_typed(path: Path, obj: Any, compact: bool = False) -> None:
    """The one writer of run.json, counters.json, mysql.json, analysis.json and series.json."""
    write_json(path, to_json(obj), compact)


def output_name(name: str) -> str:
    """The final name of one of outfile's temp files (``.NAME.PID.RAND.tmp``), else ``name``."""
    if name.startswith(".") and name.endswith(".tmp") and name.count(".") >= 4:
        return name[1:].rsplit(".", 3)[0]
    return name


def _report_source(path: Path) -> str | None:
    """The input a pmuprof findings.json says it was built from (None: not pmuprof's or unreadable)."""
    try:
        data = read_json(path / FINDINGS_JSON, None)
    except InputError:
        return None
    if not isinstance(data, dict) or "pmuprof_version" not in data or not isinstance(data.get("profile"), dict):
        return None
    source = data["profile"].get("source")
    return source if isinstance(source, str) else None


def _same_path(a: Path | str, b: Path | str) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except (OSError, RuntimeError):
        return False


def claim_output_dir(dest: Path, source: Path | None, outputs: tuple[str, ...], force: bool = False) -> Path:
    """Check ``dest`` may receive ``outputs`` before any work starts; refuse to replace what is not ours.

    Allowed: a new or empty directory; the input's own run directory; a directory holding only
    ``outputs`` that pmuprof wrote for the same input (for reports: findings.json names it).
    Anything else (a user's own report.md, another run's directory or report) needs ``force``.
    """
    if dest.exists() and not dest.is_dir():
        raise UsageError(f"{dest} exists and is not a directory", "choose a directory for -o")
    if force or not dest.exists():
        return dest
    try:
        names = sorted(p.name for p in dest.iterdir())
    except OSError as err:
        raise InputError(f"cannot read {dest}: {os.strerror(err.errno or 0)}", "choose another -o") from err
    home = (
        None if source is None else source if source.is_dir() else source.parent if is_run_dir(source.parent) else None
    )
    if not names or (home is not None and _same_path(home, dest)):
        return dest
    fix = "choose a new or empty -o, or pass --force to replace pmuprof's files there (others are kept)"
    if is_run_dir(dest):
        raise UsageError(f"{dest} is another pmuprof run directory: writing here would replace its report", fix)
    foreign = [n for n in names if output_name(n) not in outputs]
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise UsageError(f"{dest} is not empty and holds files pmuprof did not write ({shown})", fix)
    if FINDINGS_JSON in outputs:
        earlier = _report_source(dest)
        if earlier is None:
            raise UsageError(f"{dest} holds {', '.join(names)} not written by pmuprof (no pmuprof findings.json)", fix)
        if source is not None and not _same_path(earlier, source):
            raise UsageError(f"{dest} holds the report of another input ({earlier})", fix)
    return dest


def read_leaves(path: Path, notes: list[str] | None = None) -> tuple[Leaf, ...]:
    if not readable(path, notes):
        return ()
    out = []
    with os.fdopen(infile.open_evidence(path, infile.ANY_SIZE), encoding="utf-8", errors="backslashreplace") as fh:
        for line in fh:
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 4 and parts[0].isdigit():
                try:
                    out.append(Leaf(parts[1], parts[2], int(parts[3], 16), int(parts[0])))
                except ValueError:
                    continue
    return tuple(out)


def write_leaves(path: Path, leaves: dict[tuple[str, str, int], int]) -> None:
    with outfile.open_text(path) as fh:
        for (dso, sym, off), count in sorted(leaves.items(), key=lambda kv: (-kv[1], kv[0])):
            fh.write(f"{count}\t{dso}\t{sym}\t{off:x}\n")


def _tolerant(path: Path, cls: type[T], default: T | None, notes: list[str]) -> T | None:
    """A contract file, or ``default`` with a note when it is damaged (one bad file never blocks a report)."""
    try:
        return read_typed(path, cls, default)
    except InputError as err:
        notes.append(f"{err.message}: left out of the report")
        return default


def read_run(path: Path) -> Run:
    """run.json of a run directory; a damaged one gives an empty Run that says so in its warnings."""
    notes: list[str] = []
    run = _tolerant(path / RUN_JSON, Run, None, notes) or Run(source=Source(kind="rundir", path=str(path)))
    return run.with_notes(tuple(notes)) if notes else run


def read_facts(path: Path) -> tuple[Counters, ServerFacts | None, Analysis | None, tuple[str, ...]]:
    """counters.json, mysql.json and analysis.json of a run directory (each optional), and a note for
    each that is damaged (it is then left out)."""
    notes: list[str] = []
    counters = _tolerant(path / COUNTERS, Counters, Counters(), notes) or Counters()
    server = _tolerant(path / MYSQL, ServerFacts, None, notes)
    return counters, server, _tolerant(path / ANALYSIS, Analysis, None, notes), tuple(notes)


def read_series(path: Path, notes: list[str]) -> SeriesSet | None:
    """series.json of a run directory (None when the capture kept none); a damaged one is left out with a note."""
    return _tolerant(path / SERIES, SeriesSet, None, notes)


def read_status(path: Path, notes: list[str]) -> ServerStatus | None:
    """status.json of a run directory (None: a run without it, an older pmuprof's); a damaged one is left out
    with a note."""
    return _tolerant(path / STATUS, ServerStatus, None, notes)


def read_activity(path: Path, series: SeriesSet | None) -> Activity | None:
    """processlist.tsv of a run directory as the window's processlist activity (None when none was polled);
    the poller's own series says how many polls it made, also those that found no thread."""
    polled = processlist.read(path / PROCESSLIST)
    if polled is None:
        return None
    active = series.get("processlist.active") if series is not None else None
    return Activity.of_polled(polled, sum(1 for _ in active.points()) if active is not None else None)


def read_v01_skid(path: Path) -> tuple[SkidFunction, ...]:
    """0.1's skid.json (a run directory from before analysis.json): the skid-corrected functions, so that the
    spin rule can tell samples after a PAUSE from the rest; () when absent or not a list of functions."""
    try:
        rows = read_json(path, [])
    except InputError:
        return ()
    keep = {f.name for f in fields(SkidFunction)} - {"instructions"}
    out = []
    for row in rows if isinstance(rows, list) else ():
        if not isinstance(row, dict) or not isinstance(row.get("symbol"), str):
            continue
        try:
            out.append(from_json(SkidFunction, {k: v for k, v in row.items() if k in keep}))
        except (TypeError, ValueError):
            continue
    return tuple(out)


def read_offcpu(
    path: Path, read_stacks: Callable[[Path], tuple[Any, dict[str, str]]] = load_folded, notes: list[str] | None = None
) -> OffCpuProfile | None:
    """offcpu.folded and threads.json of a run directory (None when the capture recorded no off-CPU time);
    a damaged file is left out with a note, like every optional contract file."""
    notes = notes if notes is not None else []
    if not readable(path / OFFCPU, notes):
        if readable(path / OFFCPU_RAW, notes) and (path / OFFCPU_RAW).stat().st_size:
            notes.append(
                f"{OFFCPU_RAW} holds off-CPU data that was never folded (the capture was killed before "
                f"it finished): off-CPU time left out of the report"
            )
        return None
    try:
        stacks, headers = read_stacks(path / OFFCPU)
    except InputError as err:
        notes.append(f"{err.message}: off-CPU time left out of the report")
        return None
    threads = _tolerant(path / THREADS, Threads, Threads(), notes) or Threads()
    return OffCpuProfile(stacks, threads, headers)


def load_run_dir(path: Path, read_stacks: Callable[[Path], tuple[Any, dict[str, str]]] = load_folded) -> Profile:
    """An analysed run directory (stacks.folded present) as a Profile (``read_stacks`` reads the folded
    file: the analysis stage passes the native reader)."""
    stacks_path = path / STACKS
    more: list[str] = []
    if not readable(stacks_path, more):
        raise InputError(
            f"{path}: no {STACKS} in this run directory{': ' + more[0] if more else ''}",
            "re-run pmuprof record, or pass the perf.data",
        )
    stacks, _ = read_stacks(stacks_path)
    counters, server, analysis, notes = read_facts(path)
    offcpu = read_offcpu(path, read_stacks, more)
    series = read_series(path, more)
    status = read_status(path, more)
    samples, more_samples = read_samples(path / SAMPLES, stacks)
    polled = processlist.note(path / PROCESSLIST)
    leaves = read_leaves(path / LEAVES, more)
    run = read_run(path).with_notes(notes + tuple(more) + more_samples + ((polled,) if polled else ()))
    return Profile(
        stacks,
        run,
        counters,
        server,
        analysis or Analysis(skid_functions=read_v01_skid(path / "skid.json")),
        leaves,
        str(path),
        offcpu=offcpu,
        samples=samples,
        series=series,
        status=status,
        activity=read_activity(path, series),
    )


def read_samples(path: Path, stacks: Any) -> tuple[Samples | None, tuple[str, ...]]:
    """samples.tsv when present and it fits stacks.folded line for line (else None and a note why);
    ``stacks`` None: not checked against any."""
    notes: list[str] = []
    if not readable(path, notes):
        return None, tuple(notes)
    try:
        table = read_tsv(path)
    except (OSError, BadTable) as err:
        return None, (f"{path.name} is damaged ({err}): no per-thread or per-second view",)
    if stacks is not None and not table.matches(Stacks.of(stacks)):
        return None, (f"{path.name} does not match {STACKS} (edited?): no per-thread or per-second view",)
    return table, ()

"""watch-polls.tsv: what `pmuprof watch` polled before and during the capture it triggered (typed table).

pt-stalk keeps, per trigger, what the host looked like before it fired; watch keeps its own poll
values: each trigger condition's value, mysqld's CPU %, the 1-minute load average and the run queue
(procs_running / procs_blocked of /proc/stat), one row per poll, the last ``BEFORE_POLLS`` before
the capture and every poll during it. An empty cell is a value that poll did not have.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from pathlib import Path

from .. import outfile
from ..errors import InputError

BEFORE_POLLS = 60  # the lead-up kept per capture: a minute at the default 1 s interval
FIXED = ("time", "phase", "load1", "running", "blocked", "mysqld_cpu_pct")
PHASES = ("before", "during")


@dataclass(frozen=True)
class PollRow:
    t: float  # epoch seconds
    phase: str  # before | during the capture
    load1: float | None = None
    running: int | None = None  # procs_running: runnable tasks, this poll's reader included
    blocked: int | None = None  # procs_blocked: tasks in uninterruptible sleep (mostly I/O)
    cpu: float | None = None  # mysqld's CPU % since the previous poll (100 = one core)
    values: tuple[float | None, ...] = ()  # one per condition, in WatchPolls.conditions' order


@dataclass(frozen=True)
class WatchPolls:
    conditions: tuple[str, ...]  # the trigger conditions as given (column headers)
    rows: tuple[PollRow, ...]

    def __post_init__(self) -> None:
        for row in self.rows:
            if row.phase not in PHASES or len(row.values) != len(self.conditions):
                raise ValueError(f"poll row {row} does not fit the conditions {self.conditions}")


def _iso(t: float) -> str:
    return _dt.datetime.fromtimestamp(t, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _cell(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def write_tsv(path: Path, table: WatchPolls) -> None:
    """One header line, then one line per poll, oldest first."""
    lines = ["\t".join(FIXED + table.conditions)]
    for r in table.rows:
        lines.append(
            "\t".join(
                [
                    _iso(r.t),
                    r.phase,
                    _cell(r.load1),
                    _cell(r.running),
                    _cell(r.blocked),
                    _cell(r.cpu),
                    *(_cell(v) for v in r.values),
                ]
            )
        )
    outfile.write_text(path, "\n".join(lines) + "\n")


def _num(text: str) -> float | None:
    return None if text == "" else float(text)


def read_tsv(path: Path) -> WatchPolls:
    """The table written by write_tsv; anything else is an InputError naming the line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(
            f"{path}: unreadable ({err})", "the file is damaged; the capture's run.json still has the trigger"
        ) from err
    head = lines[0].split("\t") if lines else []
    if tuple(head[: len(FIXED)]) != FIXED:
        raise InputError(f"{path}: not a pmuprof watch-polls table (header {head[: len(FIXED)]})", "check the file")
    rows = []
    for n, line in enumerate(lines[1:], start=2):
        cells = line.split("\t")
        try:
            if len(cells) != len(head):
                raise ValueError(f"{len(cells)} cells, the header has {len(head)}")
            t = _dt.datetime.fromisoformat(cells[0].replace("Z", "+00:00")).timestamp()
            running, blocked = _num(cells[3]), _num(cells[4])
            rows.append(
                PollRow(
                    t,
                    cells[1],
                    _num(cells[2]),
                    None if running is None else int(running),
                    None if blocked is None else int(blocked),
                    _num(cells[5]),
                    tuple(_num(c) for c in cells[len(FIXED) :]),
                )
            )
        except ValueError as err:
            raise InputError(f"{path} line {n}: {err}", "the file is damaged") from err
    try:
        return WatchPolls(tuple(head[len(FIXED) :]), tuple(rows))
    except ValueError as err:
        raise InputError(f"{path}: {err}", "the file is damaged") from err

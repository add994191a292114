"""The report's server counters: the key counters of status.json per second over the capture (rates with
pmuprof's own statements taken out, levels as read), and InnoDB's transactions and purge at both ends.

One builder for report.html's section, report.md's and findings.json's ``profile.server_counters``; None
for a run without status.json (those outputs then stay as they were)."""

from __future__ import annotations

from statistics import median
from typing import TypedDict

from ..model.status import HISTORY, KEYS, InnodbState, ServerStatus, Transaction, is_level
from ..model.wincounters import WindowCounters


class CounterRow(TypedDict):
    """One key counter over the window: a counter's rate (``value``) and busiest second (``peak``), a level's
    average and highest reading; ``own``: what pmuprof's statements added (taken out); ``bars``: per second."""

    name: str
    unit: str
    about: str
    level: bool
    value: float | None
    peak: float | None
    first: float | None
    last: float | None
    own: float | None
    bars: str
    shown: bool


class InnodbRow(TypedDict):
    """InnoDB at one end of the capture, the transactions in words."""

    when: str
    history_length: int | None
    history_source: str
    trx_id_counter: int | None
    purge: str
    read_views: int | None
    transactions: int | None
    lock_waits: int | None
    oldest: str
    oldest_view: str
    waiting: list[str]
    missing: list[str]


class OwnRow(TypedDict):
    source: str
    polls: int
    statements: int


class ReadMs(TypedDict):
    median: float
    max: float


class ServerCounters(TypedDict):
    """The report's section (report.html, report.md)."""

    seconds: float
    polls: int
    version: str
    read_with: str
    source: str
    proof: str
    read_ms: ReadMs
    rows: list[CounterRow]
    idle: list[str]
    innodb: list[InnodbRow]
    own: list[OwnRow]
    notes: list[str]


class CounterJSON(TypedDict):
    unit: str
    level: bool
    value: float | None
    peak: float | None
    first: float | None
    last: float | None
    own: float | None


class InnodbJSON(TypedDict):
    history_length: int | None
    transactions: int | None
    lock_waits: int | None
    oldest: str
    oldest_view: str


class ServerCountersJSON(TypedDict):
    """findings.json ``profile.server_counters``."""

    seconds: float
    polls: int
    counters: dict[str, CounterJSON]
    idle: list[str]
    innodb: dict[str, InnodbJSON]


BARS = "▁▂▃▄▅▆▇█"
MAX_BARS = 60  # characters of a per-second line (more seconds: each character averages several)


def bars(values: list[float]) -> str:
    """Per-second values as a line of block characters, each scaled to the highest (▁ for zero)."""
    if not values:
        return ""
    if len(values) > MAX_BARS:
        step = len(values) / MAX_BARS
        values = [
            sum(part) / len(part)
            for i in range(MAX_BARS)
            if (part := values[int(i * step) : max(int((i + 1) * step), int(i * step) + 1)])
        ]
    top = max(values)
    if top <= 0:
        return BARS[0] * len(values)
    return "".join(BARS[min(len(BARS) - 1, int(v / top * (len(BARS) - 1) + 0.5))] if v > 0 else BARS[0] for v in values)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def counter_rows(window: WindowCounters) -> tuple[list[CounterRow], list[str]]:
    """The KEYS this server has: those that moved (or are levels) as rows, the others by name."""
    rows: list[CounterRow] = []
    idle: list[str] = []
    for key in KEYS:
        name = window.history_name() if key.name == HISTORY else key.name
        if name is None or not window.has(name):
            continue
        points = [v for _s, v in window.per_second_values(name)]
        level = is_level(name)
        if not level and not any(points):
            idle.append(name)
            continue
        rows.append(
            {
                "name": name,
                "unit": key.unit,
                "about": key.about,
                "level": level,
                "value": _round(window.mean(name)),  # a counter's rate over the window, a level's average
                "peak": _round(window.peak(name)),
                "first": _round(window.value_at("first", name)),
                "last": _round(window.value_at("last", name)),
                "own": 0.0 if level else _round(window.own(name)),
                "bars": bars(points),
                "shown": key.show,
            }
        )
    return rows, idle


def transaction_words(t: Transaction) -> str:
    """'thread 12 (app), trx 1234, 340 s old, idle in its transaction for 338 s, REPEATABLE READ, read view
    sees ids below 1200: UPDATE t SET a = ? WHERE id = ?'"""
    parts = [f"thread {t.thread_id}" + (f" ({t.user})" if t.user else "") if t.thread_id is not None else "no thread"]
    if t.trx_id and t.trx_id != "0":
        parts.append(f"trx {t.trx_id}")
    if t.age_s is not None:
        parts.append(f"{t.age_s} s old")
    if t.state == "LOCK WAIT":
        parts.append("waiting for a lock" + (f" for {t.wait_s} s" if t.wait_s is not None else ""))
    elif t.command == "Sleep":
        parts.append("idle in its transaction" + (f" for {t.idle_s} s" if t.idle_s is not None else ""))
    if t.isolation:
        parts.append(t.isolation)
    if t.view_sees_below is not None:
        parts.append(f"read view sees ids below {t.view_sees_below}")
    elif t.read_view:
        parts.append("holds a read view")
    if t.rows_modified:
        parts.append(f"{t.rows_modified:,} rows modified")
    text = ", ".join(parts)
    return text + (f": {t.statement}" if t.statement else "")


def state_rows(state: InnodbState | None) -> InnodbRow | None:
    if state is None:
        return None
    oldest, view = state.oldest_transaction(), state.oldest_view()
    purge = ""
    if state.purge_trx_no is not None:
        purge = f"done below trx {state.purge_trx_no}" + (f" ({state.purge_state})" if state.purge_state else "")
    return {
        "when": state.when,
        "history_length": state.history_length,
        "history_source": state.history_source,
        "trx_id_counter": state.trx_id_counter,
        "purge": purge,
        "read_views": state.read_views,
        "transactions": state.transactions,
        "lock_waits": state.lock_waits,
        "oldest": transaction_words(oldest) if oldest is not None else "",
        "oldest_view": transaction_words(view) if view is not None else "",
        "waiting": [transaction_words(t) for t in state.waiting],
        "missing": list(state.missing),
    }


def server_counters(status: ServerStatus | None) -> ServerCounters | None:
    """The section's data; None without status.json or with fewer than two polls."""
    window = WindowCounters.of(status) if status is not None else None
    if status is None or window is None:
        return None
    rows, idle = counter_rows(window)
    took = [p.ms for p in status.polls]
    return {
        "seconds": round(window.span, 3),
        "polls": len(status.polls),
        "version": status.server.version,
        "read_with": status.read_with,
        "source": status.source,
        "proof": status.proof,
        "read_ms": {"median": round(median(took), 2), "max": round(max(took), 2)},
        "rows": rows,
        "idle": idle,
        "innodb": [r for r in (state_rows(status.state(w)) for w in ("start", "end")) if r is not None],
        "own": [{"source": o.source, "polls": len(o.polls), "statements": o.statements} for o in status.own],
        "notes": list(status.notes),
    }


def findings_part(section: ServerCounters | None) -> ServerCountersJSON | None:
    """What findings.json keeps of it: each counter's value, peak and ends, and the InnoDB state in words."""
    if section is None:
        return None
    return {
        "seconds": section["seconds"],
        "polls": section["polls"],
        "counters": {
            r["name"]: {
                "unit": r["unit"],
                "level": r["level"],
                "value": r["value"],
                "peak": r["peak"],
                "first": r["first"],
                "last": r["last"],
                "own": r["own"],
            }
            for r in section["rows"]
        },
        "idle": section["idle"],
        "innodb": {
            s["when"]: {
                "history_length": s["history_length"],
                "transactions": s["transactions"],
                "lock_waits": s["lock_waits"],
                "oldest": s["oldest"],
                "oldest_view": s["oldest_view"],
            }
            for s in section["innodb"]
        },
    }

"""`pmuprof watch`: poll cheaply, and when a trigger holds for N polls, capture, then cool down."""

from __future__ import annotations

import datetime as _dt
import os
import time
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from collections.abc import Callable

from ..capture.mysql import facts as mysql
from ..capture.persecond import Measure, PerSecond
from ..capture.record import RecordOptions, record
from ..capture.proc import process as target
from ..capture.proc.hostload import run_queue
from .. import outfile, signals
from ..errors import Interrupted, PmuprofError, TargetError, UsageError
from ..model import rundir
from ..model.jsontypes import from_json
from ..model.run import Trigger
from ..model.watchpolls import BEFORE_POLLS, PollRow, WatchPolls, write_tsv
from ..pipeline import report_run
from ..rundir_create import check_runs_dir
from .fleet import Outcome, Publish, facts_missing, publish
from .schedule import age_text, findings_exit_code, is_pmuprof_run
from .schedule_io import disk_free, prune
from .triggers import (
    Condition,
    DiskFloor,
    FloorLog,
    Fire,
    Poll,
    WatchPlan,
    WatchState,
    captured,
    cpu_percent,
    done,
    initial_state,
    missing_status,
    of_max,
    parse_proc_stat,
    skipped,
    status_line,
    step,
    value,
)

Log = Callable[[str], None]


class Poller:
    """One kept-open server connection plus /proc reads; each poll costs one or two small queries."""

    def __init__(self, pid: int, plan: WatchPlan, mysql_options: Any | None) -> None:
        self.pid, self.plan, self.mysql_options = pid, plan, mysql_options
        self.names = sorted({c.name for c in plan.conditions if c.source == "status"} | {"Threads_running"})
        self.need_processlist = any(c.source in ("state", "command") for c in plan.conditions)
        self.need_sql = any(c.source != "cpu" for c in plan.conditions)
        self.conn: Any = None
        self.last_cpu: tuple[int, float] | None = None
        self.hz = os.sysconf("SC_CLK_TCK")

    def _sql(self) -> Any:
        if self.conn is None:
            try:
                self.conn, _, _ = mysql.connect(self.mysql_options or mysql.MysqlOptions(), self.pid)
            except ConnectionError as err:
                raise TargetError(
                    f"cannot reach the server to poll: {err}",
                    "pass --mysql-socket / --defaults-file, or use only a cpu>N trigger",
                ) from err
        return self.conn

    def _status(self, conn: Any) -> dict[str, float]:
        marks = ", ".join(["%s"] * len(self.names))
        with conn.cursor() as cur:
            cur.execute(f"SHOW GLOBAL STATUS WHERE Variable_name IN ({marks})", self.names)
            rows = cur.fetchall()
        out = {}
        for name, val in rows:
            try:
                out[str(name)] = float(val)
            except (TypeError, ValueError):
                continue
        return out

    def _processlist(self, conn: Any) -> tuple[dict[str, int], dict[str, int]]:
        states: dict[str, int] = {}
        commands: dict[str, int] = {}
        with conn.cursor() as cur:
            cur.execute(
                "SELECT STATE, COMMAND, COUNT(*) FROM information_schema.PROCESSLIST "
                "WHERE ID <> CONNECTION_ID() GROUP BY STATE, COMMAND"
            )
            for state, command, count in cur.fetchall():
                states[str(state or "")] = states.get(str(state or ""), 0) + int(count)
                commands[str(command or "")] = commands.get(str(command or ""), 0) + int(count)
        return states, commands

    def _cpu(self, now: float) -> float | None:
        try:
            with open(f"/proc/{self.pid}/stat", encoding="utf-8", errors="replace") as fh:
                ticks, _ = parse_proc_stat(fh.read())
        except (OSError, ValueError, IndexError):
            raise TargetError(f"pid {self.pid} is gone", "the server exited or restarted; pass its new pid") from None
        prev, self.last_cpu = self.last_cpu, (ticks, now)
        return None if prev is None else cpu_percent(prev[0], prev[1], ticks, now, self.hz)

    def poll(self) -> Poll:
        now = time.time()
        cpu = self._cpu(now)
        load1, running, blocked = run_queue()
        if not self.need_sql:
            return Poll(now, cpu=cpu, load1=load1, running=running, blocked=blocked)
        conn = self._sql()
        try:
            status = self._status(conn)
            states, commands = self._processlist(conn) if self.need_processlist else ({}, {})
        except Exception as err:  # noqa: BLE001 - a dropped connection is retried on the next poll
            self.close()
            raise TargetError(f"polling the server failed: {err}", "check that the server is up") from err
        return Poll(now, status, states, commands, cpu, load1=load1, running=running, blocked=blocked)

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:  # noqa: BLE001
                pass
            self.conn = None


@dataclass(frozen=True)
class Retention:
    """How many of watch's own captures its base directory keeps: by count, age and total size (None: no
    bound). The defaults bound an unattended watch (unlimited captures, one per cooldown at most): see
    docs/usage.md."""

    count: int | None = 20
    age_s: float | None = 30 * 86400.0  # pt-stalk's --retention-time default
    bytes: int | None = 2 * 2**30

    @property
    def off(self) -> bool:
        return self.count is None and self.age_s is None and self.bytes is None

    def text(self) -> str:
        parts = [
            f"{self.count} captures" if self.count is not None else "",
            age_text(self.age_s) if self.age_s is not None else "",
            f"{self.bytes / 2**30:g} GiB" if self.bytes is not None else "",
        ]
        return "keeping at most " + ", ".join(p for p in parts if p) if not self.off else "no retention"


def made_by_watch(run: Any) -> bool:
    """A run.json that watch wrote: pmuprof's, with a trigger or the `watch` command line (a capture killed
    before its trigger was added). Runs of other commands in the same directory are never pruned."""
    if not is_pmuprof_run(run):
        return False
    command = run.get("command")
    return run.get("trigger") is not None or (isinstance(command, list) and command[1:2] == ["watch"])


def apply_retention(base: Path, keep: Retention, log: Log) -> None:
    """Delete watch's oldest captures beyond ``keep`` (never the newest or one being written), one log
    line each; a failure is logged and the watch goes on."""
    if keep.off:
        return
    try:
        done = prune(
            base,
            None if keep.age_s is None else keep.age_s / 86400,
            keep.bytes,
            keep_count=keep.count,
            owner=made_by_watch,
        )
    except (OSError, PmuprofError) as err:
        log(f"retention skipped: {err}")
        return
    for deletion, foreign in done:
        left = f"; kept foreign files {', '.join(foreign)}" if foreign else ""
        log(f"retention: deleted {base / deletion.name} ({deletion.reason}, {deletion.size / 2**20:.1f} MiB){left}")


@dataclass(frozen=True)
class WatchOptions:
    """``pids``: the servers watched. Each is polled on its own connection and holds its own trigger count;
    the first whose trigger holds is captured together with the others (it first: its server facts)."""

    pids: tuple[int, ...]
    plan: WatchPlan
    base_dir: Path
    interval_s: float = 1.0
    duration_s: float = 30.0
    disk_floor: DiskFloor = DiskFloor(bytes=100 * 2**20, percent=5.0)
    mysql_options: Any | None = None
    record: dict[str, Any] = field(default_factory=dict)  # extra RecordOptions fields (frequency, mode...)
    verbose: bool = False
    command: tuple[str, ...] = ()
    publish: Publish = Publish()  # textfile metrics and notify command after each capture
    keep: Retention = Retention(None, None, None)  # the CLI passes its defaults; a library caller opts in


class DuringCapture(PerSecond):
    """watch's polls while perf records, as a capture source: run.json's ``polls_during`` and
    watch-polls.tsv keep them (epoch times, as the polls before the capture), series.json keeps each
    condition's value on the capture's clock (``watch.<what it reads>``), so the seconds strip shows the
    trigger beside the samples. A failing poll ends them (the capture goes on)."""

    name = "watch"

    def __init__(self, poller: Poller, interval: float, **kw: Any) -> None:
        super().__init__(**kw)
        self.poller, self.interval = poller, interval
        self.polls_seen: list[Poll] = []
        self.join_s = interval + 35  # the poller is watch's own: never used by two threads at once
        self.reads: dict[str, Condition] = {}
        for cond in poller.plan.conditions:  # one series per subject, in the order the conditions name them
            self.reads.setdefault(f"watch.{_subject(cond)}", cond)
        self.measures = tuple(
            Measure(name, "%" if c.source == "cpu" else "", f"what the trigger {c.text} reads", show=True)
            for name, c in self.reads.items()
        )

    def read(self) -> Poll:
        return self.poller.poll()

    def keep(self, second: int, reading: Poll) -> dict[str, float | None]:
        self.polls_seen.append(reading)
        return {name: value(c, reading) for name, c in self.reads.items()}


def _subject(cond: Condition) -> str:
    """What a condition reads, as typed: ``Threads_running``, ``state:statistics``, ``cpu``."""
    return cond.name if cond.source in ("status", "cpu") else f"{cond.source}:{cond.name}"


def _out_dir(base: Path, fire: Fire) -> Path:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = base / f"{stamp}-{fire.condition.slug}"
    n = 2
    while path.exists():
        path, n = base / f"{stamp}-{fire.condition.slug}-{n}", n + 1
    return path


def poll_table(conditions: tuple[Condition, ...], before: tuple[Poll, ...], during: tuple[Poll, ...]) -> WatchPolls:
    """watch-polls.tsv's rows: the polls before the capture, then those during it."""

    def row(poll: Poll, phase: str) -> PollRow:
        return PollRow(
            poll.t,
            phase,
            poll.load1,
            poll.running,
            poll.blocked,
            None if poll.cpu is None else round(poll.cpu, 2),
            tuple(value(c, poll) for c in conditions),
        )

    return WatchPolls(
        tuple(c.text for c in conditions),
        tuple(row(p, "before") for p in before) + tuple(row(p, "during") for p in during),
    )


def capture_once(
    opts: WatchOptions, fire: Fire, poller: Poller, log: Log, before: tuple[Poll, ...] = ()
) -> tuple[Path, str]:
    """Record + report into BASE/<time>-<trigger>/; returns (run dir, the signal that stopped it or "").
    ``poller`` is the server whose trigger held: the first target, the one polled during the capture."""
    out = _out_dir(opts.base_dir, fire)
    where = f" on pid {poller.pid}" if len(opts.pids) > 1 else ""
    log(
        f"trigger {fire.condition.text} held for {fire.hits} polls{where}: capture "
        f"{of_max(opts.plan, fire.capture_index)} for {opts.duration_s:g} s into {out}"
    )
    ropts = RecordOptions(
        pids=(poller.pid, *(p for p in opts.pids if p != poller.pid)),
        out_dir=out,
        duration=opts.duration_s,
        mysql_options=opts.mysql_options,
        command=opts.command or ("pmuprof", "watch"),
        **opts.record,
    )
    during = DuringCapture(poller, opts.interval_s)
    record(ropts, None, log, extra=(during,))
    trigger = {
        **fire.to_dict(opts.plan),
        "pid": poller.pid,
        "fired_at": _iso(fire.polls[-1].t),
        "interval_s": opts.interval_s,
        "polls_during": [p.to_dict(opts.plan.conditions) for p in during.polls_seen],
    }
    run = replace(rundir.read_run(out), trigger=from_json(Trigger, trigger))
    rundir.write_typed(out / rundir.RUN_JSON, run)
    write_tsv(
        out / rundir.WATCH_POLLS, poll_table(opts.plan.conditions, before or fire.polls, tuple(during.polls_seen))
    )
    try:
        result = report_run(out, log=log)
        log(f"report: {result.paths['html']}")
        degraded = facts_missing(result.profile, opts.record.get("mysql", True), str(result.paths["html"]))
        if degraded:
            log(f"warning: {degraded}")
        code = degraded.exit_code if degraded else findings_exit_code(result.findings)
        outcome = Outcome(code, out, result.profile, result.diagnosis, str(degraded or ""), time.time())
    except PmuprofError as err:  # an unreadable recording must not end the watch
        log(f"no report for {out}: {err}")
        outcome = Outcome(err.exit_code, out, error=str(err), ended=time.time())
    publish(opts.publish, outcome, log)
    return out, run.stopped_by if run.stopped_by.startswith("SIG") else ""


def _iso(epoch: float) -> str:
    return _dt.datetime.fromtimestamp(epoch, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4] + "Z"


def _first_poll(poller: Poller, plan: WatchPlan) -> Poll:
    poll = poller.poll()
    missing = missing_status(plan.conditions, poll)
    if missing:
        raise UsageError(
            f"the server has no numeric status variable {', '.join(missing)}",
            "check the name with SHOW GLOBAL STATUS LIKE '...' (names are case-sensitive)",
        )
    return poll


MAX_POLL_FAILURES = 30  # in a row; a server restart usually takes less


def _next_poll(poller: Poller, opts: WatchOptions, log: Log, sleep: Callable[[float], None]) -> Poll:
    """Poll again; ride out a dropped connection (reconnect next time), give up when the pid is gone."""
    failures = 0
    while True:
        try:
            return poller.poll()
        except TargetError as err:
            failures += 1
            if not target.is_alive(poller.pid) or failures >= MAX_POLL_FAILURES:
                raise
            if failures == 1:
                log(f"poll failed, retrying every {opts.interval_s:g} s: {err}")
            sleep(opts.interval_s)


@dataclass
class _Watched:
    """One watched server: its poller, its trigger state, the polls before its next capture."""

    poller: Poller
    state: WatchState
    history: deque = field(default_factory=lambda: deque(maxlen=BEFORE_POLLS))


def _step_all(opts: WatchOptions, servers: list[_Watched], polls: list[Poll], log: Log) -> tuple[_Watched, Fire] | None:
    """Feed each server its poll; the first server whose trigger holds, with its Fire."""
    fired = None
    for server, poll in zip(servers, polls):
        server.history.append(poll)
        server.state, fire = step(opts.plan, server.state, poll)
        if opts.verbose:
            who = f"pid {server.poller.pid}: " if len(servers) > 1 else ""
            log(who + status_line(opts.plan, server.state, poll))
        if fire is not None and fired is None:
            fired = (server, fire)
    return fired


def _on_fire(
    opts: WatchOptions, servers: list[_Watched], fired: tuple[_Watched, Fire], log: Log, floor: FloorLog
) -> tuple[Path | None, str]:
    """Capture (all servers, the one that fired first) unless the disk floor forbids it; every server then
    cools down. Returns (the run directory or None, the signal that stopped the capture or "")."""
    server, fire = fired
    reason = opts.disk_floor.violation(*disk_free(opts.base_dir))
    floor.said(fire, reason)
    if reason:
        for each in servers:
            each.state = skipped(opts.plan, each.state, time.time())
        return None, ""
    path, stop = capture_once(opts, fire, server.poller, log, tuple(server.history))
    apply_retention(opts.base_dir, opts.keep, log)
    for each in servers:
        each.history.clear()  # the next capture's lead-up starts here
        each.state = captured(opts.plan, each.state, time.time())
    return path, stop


def watch(opts: WatchOptions, log: Log, sleep: Callable[[float], None] = time.sleep) -> list[Path]:
    """Poll until max captures are taken or Ctrl-C; return the run directories written."""
    outfile.ensure_dir(opts.base_dir)
    check_runs_dir(opts.base_dir, "-o")
    plan, runs, stop, floor = opts.plan, [], "", FloorLog(log)
    servers = [_Watched(Poller(pid, plan, opts.mysql_options), initial_state(plan)) for pid in opts.pids]
    each = " (each on its own; the first to hold captures them all)" if len(servers) > 1 else ""
    log(
        f"watching pid {', '.join(map(str, opts.pids))} every {opts.interval_s:g} s for "
        f"{' or '.join(c.text for c in plan.conditions)} ({plan.cycles} polls in a row){each}; "
        f"{'up to ' + str(plan.max_captures) if plan.max_captures else 'unlimited'} capture(s) into {opts.base_dir}, "
        f"{opts.keep.text()}"
    )
    apply_retention(opts.base_dir, opts.keep, log)
    try:
        polls = [_first_poll(s.poller, plan) for s in servers]
        while True:
            fired = _step_all(opts, servers, polls, log)
            if fired is not None:
                path, stop = _on_fire(opts, servers, fired, log, floor)
                runs += [path] if path else []
                if stop or done(plan, servers[0].state):
                    break
            sleep(max(0.0, opts.interval_s - (time.time() - polls[0].t)))
            polls = [_next_poll(s.poller, opts, log, sleep) for s in servers]
    except signals.STOPS as err:
        stop = signals.name_of(err)
    finally:
        for server in servers:
            server.poller.close()
    skips = f"; {floor.skipped} skipped under the disk floor" if floor.skipped else ""
    log(f"{len(runs)} capture(s): {', '.join(str(r) for r in runs) or 'none'}{skips}")
    if stop:
        raise Interrupted(f"watch stopped by {stop}", "", signals.exit_code(stop))
    return runs

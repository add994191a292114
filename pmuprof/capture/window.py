"""The perf source: perf record + perf stat for the capture window every other source lines up with.

start() writes perf's command lines and control FIFOs; wait() runs the window (with the programs other
sources run inside it, started when perf's window starts) until the clock, a stop signal, the disk, or
the targets end it, and again without the cgroup filter when perf refuses it; stop() stops perf and
says what really happened: the window's length and end, the event recorded, counters.json.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from .. import rundir_create, signals
from ..errors import PerfError, PmuprofError
from ..model import rundir
from ..model.counters import CounterValue, Counters, event_name
from ..model.jsontypes import from_json
from ..model.run import FeatureOff, Record
from ..tools.perf import argv as perfcmd, parse as perfparse, read as perfread, repair
from . import diskroom
from .lifecycle import Context, Part, Unfinished, WindowSource
from .runner import Bounded, Control, DiskGuard, Outcome, Progress

UNFINISHED_NOTE = (
    "perf did not close perf.data (killed, or out of disk): pmuprof set its data size from the file; "
    "the last samples may be missing"
)
SIZE_LIMIT = "perf size limit reached"  # perf record's stderr when --max-size stopped it
NO_PMU_FIX = "run on bare metal or enable the vPMU (e.g. KVM `-cpu host,pmu=on`)"
FILES = (rundir.PERF_DATA, rundir.RECORD_LOG, rundir.STAT_CSV, rundir.STAT_LOG, rundir.COUNTERS)


@dataclass(frozen=True)
class Cap:
    """perf record --max-size, and whether it is the disk's limit (free space above the reserve)."""

    size: int
    by_disk: bool
    reserve: int


class Perf(WindowSource):
    name = "perf"

    def __init__(self, cap: Cap, progress: Progress | None = None) -> None:
        self.cap, self.progress = cap, progress
        self.cgroup: str | None = None
        self.notes: tuple[str, ...] = ()
        self.argv: dict[str, tuple[list[str], Path]] = {}
        self.bounded: Bounded | None = None
        self.stat_fd = -1  # perf stat's CSV, opened by pmuprof (no link followed); perf writes through it

    def start(self, ctx: Context) -> None:
        self.cgroup = ctx.run.cgroup
        self._prepare(ctx)

    def _prepare(self, ctx: Context) -> None:
        """perf's command lines for this window (and the children's), and its control FIFOs."""
        opts, out, children = ctx.opts, ctx.out_dir, ctx.window.children
        data = out / rundir.PERF_DATA
        data.unlink(missing_ok=True)
        spec = perfcmd.RecordSpec(
            data,
            ctx.pids,
            opts.frequency,
            opts.call_graph,
            opts.mode,
            opts.event,
            self.cgroup,
            max_size_bytes=self.cap.size,
            user_sp=any(c.user_sp for c in children.values()),  # the on-CPU sampler's stopped-walk key
        )
        stat_events = perfcmd.STAT_SOFTWARE + tuple(ctx.run.stat.labels)  # the curated PMU events' perf names
        control = Control(out)
        self._close_stat()
        self.stat_fd = rundir_create.open_stream(out / rundir.STAT_CSV)
        self.argv = {
            "record": (perfcmd.record_argv(ctx.perf, spec, control.argv()), out / rundir.RECORD_LOG),
            "stat": (
                perfcmd.stat_argv(ctx.perf, self.stat_fd, ctx.pids, stat_events, opts.mode, self.cgroup),
                out / rundir.STAT_LOG,
            ),
            **{name: (list(c.argv), c.log) for name, c in children.items()},
        }
        self.bounded = Bounded(
            self.argv,
            ctx.pids,
            ctx.run.host.perf_event_paranoid,
            data,
            control,
            DiskGuard(out, self.cap.reserve, room=True),
            starters=tuple(children),
            at_end=tuple(c.at_end for c in children.values() if c.at_end is not None),
            pass_fds={"stat": (self.stat_fd,)},
        )

    def _close_stat(self) -> None:
        if self.stat_fd >= 0:
            os.close(self.stat_fd)
            self.stat_fd = -1

    def wait(self, ctx: Context) -> None:
        try:
            self._run(ctx)
        except PerfError as err:
            if not self.cgroup:
                raise
            ctx.log(f"perf refused the cgroup filter ({err.message}); sampling all CPUs without it")
            self.notes += (f"perf refused -G {self.cgroup} ({err.message}): sampled without the cgroup filter",)
            self.cleanup()
            self.cgroup = None
            self._prepare(ctx)
            self._run(ctx)

    def _run(self, ctx: Context) -> None:
        assert self.bounded is not None
        try:
            self.bounded.start()
            self.bounded.wait(ctx.opts.duration, self.progress)
        except signals.STOPS as err:  # between the two: the window ends as a signal in it would end it
            self.bounded.out.interrupted, self.bounded.out.stopped_by = True, signals.name_of(err)

    def cleanup(self) -> None:
        if self.bounded is not None:
            self.bounded.stop()
        self._close_stat()

    def end(self, ctx: Context) -> None:
        if self.bounded is not None:
            ctx.window.outcome = self.bounded.end()

    def stop(self, ctx: Context) -> Part:
        assert self.bounded is not None
        out = self.bounded.stop()
        self._close_stat()
        ctx.window.outcome = out
        warnings = list(self.notes) + self._end(ctx, out)
        stderr = perfparse.parse_record_stderr(out.stderr.get("record", ""))
        record = replace(
            ctx.run.record,
            argv=tuple(self.argv["record"][0]),
            samples_total=stderr.get("samples_total"),
            lost=stderr.get("lost"),
            data_mb=stderr.get("data_mb"),
        )
        warnings += outcome_warnings(out)
        data = ctx.out_dir / rundir.PERF_DATA
        if repair.finish_header(data):
            warnings.append(UNFINISHED_NOTE)
        fields = {
            "duration_s": out.elapsed_s,
            "interrupted": out.interrupted,
            "stopped_by": out.stopped_by or ("perf-killed" if out.perf_killed else ""),
            "cgroup": self.cgroup,
            "record": record,
            "stat": replace(ctx.run.stat, argv=tuple(self.argv["stat"][0])),
        }
        part, failed = Part(self.name, fields, tuple(warnings), files=FILES), None
        steps = (
            lambda: recorded_event(record, ctx.perf, data),
            lambda: write_counters(ctx, out.elapsed_s, self.cgroup),
        )
        for step in steps:  # each one whatever the other gave; the first error is raised after
            try:
                got, said, off = step()
            except (PmuprofError, OSError) as err:  # run.json still gets the window's facts
                failed = failed or err
                continue
            fields = {**part.fields, "record": got} if isinstance(got, Record) else dict(part.fields)
            part = replace(part, fields=fields, warnings=part.warnings + said, features_off=part.features_off + off)
        if failed is not None:
            raise Unfinished(part) from failed
        return part

    def _end(self, ctx: Context, out: Outcome) -> list[str]:
        """What stopped perf short (the disk, its size cap): ``out.stopped_by`` set; the note when it was the cap."""
        log = out.stderr.get("record", "")
        if out.stopped_by == "disk" or diskroom.perf_ran_out(log):
            diskroom.release(ctx.out_dir)  # the last files go in the room kept for them
            if not out.stopped_by:
                out.stopped_by = "disk"
                out.disk_low = f"perf record could not write perf.data ({diskroom.PERF_FULL}) in {ctx.out_dir}"
        if SIZE_LIMIT not in log or out.stopped_by:
            return []
        cap = self.cap
        if cap.by_disk:
            out.stopped_by = "disk"
            out.disk_low = (
                f"perf.data reached {cap.size / 2**20:.0f} MiB, all the space above the "
                f"{cap.reserve / 2**20:.0f} MiB pmuprof keeps free on {ctx.out_dir}"
            )
            return []
        return [
            f"perf.data reached its size limit ({cap.size / 2**20:.0f} MiB, 4x the estimate) "
            f"after {out.elapsed_s:.1f} s: the capture is shorter than asked"
        ]


def outcome_warnings(outcome: Outcome) -> list[str]:
    out = []
    if outcome.target_exited:
        out.append(
            f"target pid(s) {', '.join(map(str, outcome.target_exited))} exited during the capture after "
            f"{outcome.elapsed_s:.1f} s; the report covers the time before that"
        )
    if outcome.interrupted:
        out.append(
            f"capture interrupted ({outcome.stopped_by or 'Ctrl-C'}) after {outcome.elapsed_s:.1f} s; "
            "kept what was recorded"
        )
    if outcome.perf_killed:
        out.append(
            f"perf record was killed by {outcome.perf_killed} after {outcome.elapsed_s:.1f} s (the OOM "
            "killer or another tool?); the report covers what it wrote"
        )
    if outcome.stopped_by == "disk":
        out.append(f"capture stopped after {outcome.elapsed_s:.1f} s to keep the disk from filling: {outcome.disk_low}")
    return out


def recorded_event(record: Record, perf: str, data: Path) -> tuple[Record, tuple[str, ...], tuple[FeatureOff, ...]]:
    """perf may silently substitute cpu-clock for cycles on hosts without a PMU: say so."""
    rec = perfread.Recording(tuple(perfread.recorded_events(perf, data)), {}, {})
    record, rate = perfread.recorded_rate(record, rec)
    record = replace(record, event_recorded=rec.event, events_recorded=tuple(e["name"] for e in rec.events))
    asked = event_name(record.event_requested)
    if rec.event == asked:
        return record, rate, ()
    return (
        record,
        rate
        + (
            f"perf recorded {rec.event} instead of {asked}: no usable hardware PMU on this host (a VM without a "
            f"vPMU?). Function shares are time-based and still right; cycle/IPC facts are unavailable",
        ),
        (FeatureOff("hardware cycles sampling", f"perf substituted {rec.event}", NO_PMU_FIX),),
    )


def write_counters(
    ctx: Context, duration_s: float, cgroup: str | None
) -> tuple[None, tuple[str, ...], tuple[FeatureOff, ...]]:
    """counters.json from perf stat's CSV (curated PMU events named as pmuprof names them)."""
    stat_out = ctx.out_dir / rundir.STAT_CSV
    rows = perfparse.parse_stat_csv(stat_out.read_text(errors="replace")) if stat_out.exists() else []
    values = []
    for row in rows:  # curated PMU events are named (pause_inst, remote_dram, ...); perf's spelling is kept
        name = ctx.run.stat.labels.get(event_name(row["event"]))
        if name and name != row["event"]:
            row = {**row, "perf": row["event"], "event": name}
        values.append(from_json(CounterValue, {k: v for k, v in row.items() if v is not None}))
    scope = (
        f"cgroup {cgroup}"
        if cgroup
        else ("system-wide (all processes)" if ctx.opts.mode == "per-cpu" else "target threads")
    )
    counters = Counters(scope, duration_s, tuple(values))
    ipc = counters.ipc()
    rundir.write_typed(
        ctx.out_dir / rundir.COUNTERS, replace(counters, derived={"ipc": round(ipc, 4)} if ipc is not None else {})
    )
    if counters.value("cycles") is not None or counters.value("instructions") is not None:
        return None, (), ()
    return (
        None,
        (),
        (
            FeatureOff(
                "IPC (cycles, instructions)",
                "no hardware PMU counters here",
                "run on bare metal or a VM with a virtual PMU",
            ),
        ),
    )

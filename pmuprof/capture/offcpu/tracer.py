"""Off-CPU capture beside perf: plan the tracer (or say why not), then name, fold and write what it summed.

Loading BPF needs CAP_BPF and CAP_PERFMON (the effective set is checked, not the uid: capture/caps.py).
The targets are never stopped or traced: the kernel sums off-CPU time per stack at sched_switch and
the maps are read once, after the program is detached. Without BPF the capture goes on on-CPU only,
with the /proc thread snapshots, and run.json says what was not recorded and why.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, field, replace
from pathlib import Path
from collections.abc import Mapping, Sequence

from ...errors import HelperError
from ...model import callers, rundir
from ...model.folded import save_folded
from ...model.offcpu import OffCpu, Threads
from ...model.run import FeatureOff, FileMap
from ...packages import OFFCPU
from ...paths import helper_path, offcpu_path
from ...tools.native import helper, offcpu as tool, runnable
from ...tools.native.symbolize import symbolize
from .. import caps
from ..proc import process, threads as proc_threads
from . import snapshot
from .fold import fold
from .symbols import KernelSymbols, UserSymbols

MECHANISM = "BPF tp_btf/sched_switch, summed in kernel maps (pmuprof-offcpu)"
SAMPLER_MAX_HZ = 999  # the on-CPU sampler follows perf's rate up to this (each tick under a library walks a stack)
MAX_SAMPLE_RATE = Path("/proc/sys/kernel/perf_event_max_sample_rate")  # the kernel lowers it on busy hosts
BTF = Path("/sys/kernel/btf/vmlinux")
START_SLACK_S = 120.0  # perf may take this long to start; the runner stops the tracer with perf
FEATURE = "off-CPU stacks (why threads wait)"


@dataclass(frozen=True)
class Plan:
    requested: bool
    pids: tuple[int, ...] = ()
    roots: Mapping[int, str] = field(default_factory=dict)
    argv: tuple[str, ...] = ()  # empty: the tracer cannot run here (why_not says why)
    why_not: str = ""
    fix: str = ""
    start: Mapping[int, Mapping[int, proc_threads.ThreadNow]] = field(default_factory=dict)
    started_at: str = ""
    maps: Mapping[int, tuple[FileMap, ...]] = field(default_factory=dict)  # at the start (a target may exit)
    sample_hz: int = 0  # the on-CPU sampler's rate (0: off)
    out_log: Path = Path(rundir.OFFCPU_LOG)  # the tracer's stderr (it waits for SIGUSR1 to count)


SWITCH_IN_TP = b"btf_trace_sched_exit_tp\x00"  # lazy mode's tracepoint (6.16+), as its BTF type name


def cheap_here() -> bool:
    """Whether the tracer runs in lazy mode here (the kernel has sched_exit_tp): stacks only for blocks of
    1 ms or more, ~0.8 us per switch; without it every switch-out walks both stacks (~3 us, 0.6-0.8x TPS)."""
    try:
        return SWITCH_IN_TP in BTF.read_bytes()
    except OSError:
        return False


def unavailable(pids: Sequence[int]) -> tuple[str, str]:
    """(why, fix) the tracer cannot run here, or ("", "")."""
    lacking = caps.bpf_missing(caps.effective())
    if lacking:
        return (
            f"no {' or '.join(lacking)}: BPF tracing needs CAP_BPF and CAP_PERFMON (effective capabilities)",
            "run pmuprof as root with them (a systemd unit: in CapabilityBoundingSet=)",
        )
    binary = offcpu_path()
    if binary is None:
        return ("pmuprof-offcpu is not built (clang with the BPF target and libbpf are needed)", runnable.fix(OFFCPU))
    broken = runnable.startup_error(binary)
    if broken:
        return f"pmuprof-offcpu cannot start: {broken}", runnable.fix(OFFCPU, broken)
    if not BTF.is_file():
        return f"{BTF} is missing: the kernel has no BTF (CONFIG_DEBUG_INFO_BTF)", "use a kernel built with BTF"
    if len(pids) > tool.MAX_TARGETS:
        return f"{len(pids)} targets: the tracer follows at most {tool.MAX_TARGETS}", "pass fewer -p PIDs"
    return "", ""


def require(pids: Sequence[int]) -> None:
    """--off-cpu asked for: raise HelperError (one line, exit 8) before recording when the tracer cannot run."""
    why, fix = unavailable(pids)
    if why:
        raise HelperError(f"--off-cpu: {why}", fix)


def plan(
    out_dir: Path,
    pids: Sequence[int],
    roots: Mapping[int, str],
    duration_s: float,
    requested: bool | None,
    perf_hz: int = 0,
) -> Plan:
    """The tracer's argv (or why not) and the /proc snapshot of every target's threads at the start.
    ``requested`` None (capture's default): on only where it runs and is cheap (root, built, BTF, lazy
    mode: stacks for blocks of 1 ms or more); elsewhere off without a warning (the report's first screen
    says when the server mostly waited). True (``--off-cpu``, asked for): every block with its stacks,
    taken at switch-out (eager: exact shares of short waits too, ~3 us a switch). ``perf_hz``: perf's
    frame-pointer sampling rate (0: not frame pointers); the tracer's on-CPU sampler follows it (at most
    SAMPLER_MAX_HZ), for the callers perf's walk skips under a library leaf (model/callers.py)."""
    eager = bool(requested)
    if requested is None:
        requested = not unavailable(pids)[0] and cheap_here()
    if not requested:
        return Plan(False)
    start = {pid: {t.tid: t for t in proc_threads.snapshot(pid)} for pid in pids}
    why, fix = unavailable(pids)
    hz = 0 if why else min(perf_hz, SAMPLER_MAX_HZ, _max_sample_rate())
    binary = offcpu_path()  # None only where ``why`` says so
    argv = (
        ()
        if why or binary is None
        else tuple(
            tool.argv(
                binary,
                pids,
                duration_s + START_SLACK_S,
                out_dir / rundir.OFFCPU_RAW,
                eager=eager,
                start_on_usr1=True,
                sample_hz=hz,
            )
        )
    )
    return Plan(
        True,
        tuple(pids),
        dict(roots),
        argv,
        why,
        fix,
        start,
        snapshot.utc_now(),
        _maps(pids),
        hz,
        out_dir / rundir.OFFCPU_LOG,
    )


@dataclass(frozen=True)
class EndSnapshot:
    """The targets' threads (pid -> tid -> its /proc state) and when they were read (UTC)."""

    threads: Mapping[int, Mapping[int, proc_threads.ThreadNow]]
    at: str


def end_snapshot(pids: Sequence[int]) -> EndSnapshot:
    return EndSnapshot({pid: {t.tid: t for t in proc_threads.snapshot(pid)} for pid in pids}, snapshot.utc_now())


def finish(
    p: Plan,
    out_dir: Path,
    returncode: int | None,
    stderr: str,
    per_thread_roots: bool = False,
    ended: EndSnapshot | None = None,
) -> tuple[OffCpu | None, tuple[str, ...], tuple[FeatureOff, ...]]:
    """Write threads.json and offcpu.folded; the run.json outcome, warnings and features off. ``ended``: the
    threads read as the tracer was stopped (read now when the window did not run)."""
    if not p.requested:
        return None, (), ()
    ended = ended or end_snapshot(p.pids)
    end, ended_at = ended.threads, ended.at
    outcome = OffCpu(
        requested=True,
        mechanism=MECHANISM,
        argv=p.argv,
        returncode=returncode,
        stderr=stderr.strip()[-2000:],
        why_not=p.why_not,
    )
    out, read_error = _read_output(out_dir / rundir.OFFCPU_RAW) if p.argv else (None, "")
    usyms = UserSymbols({pid: maps or p.maps.get(pid, ()) for pid, maps in _maps(p.pids).items()}, _funcs(), symbolize)
    if out is not None:
        outcome = _fold_and_write(p, out_dir, out, usyms, end, per_thread_roots, outcome)
    user = {pid: snapshot.bpf_user_stacks(out, usyms, pid) if out else {} for pid in p.pids}
    snaps = [
        snapshot.group(
            when,
            at,
            pid,
            p.roots.get(pid, str(pid)),
            tuple(view.get(pid, {}).values()),
            user[pid] if when == "end" else None,
        )
        for when, at, view in (("start", p.started_at, p.start), ("end", ended_at, end))
        for pid in p.pids
    ]
    rundir.write_typed(out_dir / rundir.THREADS, Threads(tuple(snaps)))
    if outcome.recorded:
        return outcome, _loss_warnings(outcome) + tuple(usyms.problems[:5]), ()
    why = outcome.why_not or read_error or _tracer_failure(returncode, stderr)
    outcome = replace(outcome, why_not=why)
    return (
        outcome,
        (
            f"off-CPU stacks not recorded: {why}; the capture is on-CPU only (threads.json has the "
            "/proc thread snapshots)",
        ),
        (FeatureOff(FEATURE, why, p.fix or "see offcpu.log"),),
    )


def _fold_and_write(
    p: Plan, out_dir: Path, out: tool.TracerOutput, usyms: UserSymbols, end, per_thread_roots: bool, outcome: OffCpu
) -> OffCpu:
    folded = fold(out, p.roots, KernelSymbols.read(), usyms, p.start, end, per_thread_roots)
    duration = round((out.end_ns - out.t0_ns) / 1e9, 3)
    lost = {
        k: v
        for k, v in out.stats.items()
        if k not in ("switches", "ustack_scanned", "short", "long", "samples", "samples_fpless", "wakeups")
    }
    headers = {
        "unit": "us",
        "source": MECHANISM,
        "duration_s": duration,
        "total_us": folded.total_us,
        "before_us": folded.before_us,
        "short_us": folded.short_us,
        "min_block_us": out.min_block_us,
        **({"runnable_us": folded.runnable_us, "wakeups": out.wakeups} if out.wakeups else {}),
        "leaf": "off-cpu:STATE (R runnable, S sleep, D uninterruptible"
        + (", W woken: waiting for a CPU after the wake-up)" if out.wakeups == "on" else ")"),
        "targets": " ".join(f"{label}={pid}" for pid, label in p.roots.items()),
    }
    save_folded(out_dir / rundir.OFFCPU, folded.stacks, headers)
    outcome = _write_callers(p, out_dir, out, outcome)
    return replace(
        outcome,
        recorded=True,
        stopped_by=out.stopped_by,
        duration_s=duration,
        total_us=folded.total_us,
        before_us=folded.before_us,
        stacks=len(folded.stacks),
        threads=folded.threads,
        switches=out.stats.get("switches"),
        user_stacks_scanned=out.stats.get("ustack_scanned"),
        user_stacks_recovered=len(out.recovered),
        mode=out.mode,
        min_block_us=out.min_block_us,
        short_us=folded.short_us,
        wakeups=out.wakeups == "on",
        runnable_us=folded.runnable_us if out.wakeups == "on" else None,
        wakeup_off=out.wakeup_off,
        lost=lost,
        limits=dict(out.limits),
    )


def _max_sample_rate() -> int:
    """The kernel's cap on a perf event's frequency (perf_event_open refuses more: the sampler would not run)."""
    try:
        return max(1, int(MAX_SAMPLE_RATE.read_text().strip()))
    except (OSError, ValueError):
        return SAMPLER_MAX_HZ


def _write_callers(p: Plan, out_dir: Path, out: tool.TracerOutput, outcome: OffCpu) -> OffCpu:
    """recovered-callers.tsv from the on-CPU sampler's stacks, and its counts in run.json."""
    if not p.sample_hz:
        return outcome
    if out.sampler_off:
        return replace(outcome, sampler_off=out.sampler_off)
    found = callers.table(out.sampled)
    callers.write(out_dir / rundir.RECOVERED_CALLERS, found.rows)
    return replace(
        outcome,
        sample_hz=p.sample_hz,
        sampled=out.stats.get("samples"),
        sampled_in_library=out.stats.get("samples_fpless"),
        callers_recovered=found.recovered,
        callers_ambiguous=found.ambiguous,
        callers_rare=found.rare,
    )


def _read_output(path: Path) -> tuple[tool.TracerOutput | None, str]:
    if not path.is_file():
        return None, ""
    try:
        return tool.load(path), ""
    except (OSError, ValueError) as err:
        return None, f"{path.name}: {err}"


def _tracer_failure(returncode: int | None, stderr: str) -> str:
    if returncode is not None and returncode < 0:  # its last line was written before it was killed
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"pmuprof-offcpu was killed by {name} before it wrote its stacks"
    lines = [line for line in stderr.splitlines() if line.strip()]
    if lines:
        return lines[-1].strip()[:300]
    return f"pmuprof-offcpu exited with status {returncode} and wrote nothing"


def _maps(pids: Sequence[int]) -> dict[int, tuple[FileMap, ...]]:
    return {pid: tuple(FileMap(**m) for m in process.exec_maps(pid)) for pid in pids}


def _funcs():
    """The helper's function lookup, or None when it is not built (user frames are then '[dso]')."""
    return helper.funcs if helper_path() is not None else None


def _over_a_percent_of_switches(o: OffCpu, *kinds: str) -> int:
    """The tracer's losses of these kinds together, when they exceed 1 % of the switches it saw (else 0)."""
    lost = sum(o.lost.get(kind, 0) for kind in kinds)
    return lost if o.switches and lost > o.switches * 0.01 else 0


def _loss_warnings(o: OffCpu) -> tuple[str, ...]:
    out = []
    if o.lost.get("entries_full"):
        out.append(
            f"off-CPU: {o.lost['entries_full']} waits dropped, the wait map was full "
            f"({o.limits.get('entries')} entries)"
        )
    if o.lost.get("threads_full"):
        out.append(f"off-CPU: {o.lost['threads_full']} switch-outs not tracked, the thread map was full")
    if o.sampled_in_library and o.lost.get("samples_lost", 0) > o.sampled_in_library * 0.01:
        out.append(
            f"on-CPU sampler: {o.lost['samples_lost']} of {o.sampled_in_library} ticks under a library leaf "
            f"not kept (its sample map, {o.limits.get('entries')} entries, or stack map, "
            f"{o.limits.get('stacks')} stacks, was full): their callers are not recovered"
        )
    if o.wakeup_off:
        out.append(f"off-CPU: wake-ups not traced ({o.wakeup_off}): blocked time includes the wait for a CPU after it")
    if o.sampler_off:
        out.append(
            f"on-CPU sampler off ({o.sampler_off}): callers a frame-pointer walk skips under glibc are "
            "not recovered; the off-CPU stacks are complete"
        )
    missed = _over_a_percent_of_switches(o, "out_missed", "in_missed")
    if missed:
        out.append(
            f"off-CPU: {missed} of {o.switches} context switches not seen by the tracer (other tracers on the "
            "scheduler's tracepoints meanwhile?): their waits are left out, the off-CPU times are lower bounds"
        )
    # (an upper bound in lazy mode: fewer stacks are taken)
    stacks_lost = _over_a_percent_of_switches(o, "kstack_lost", "ustack_lost")
    if stacks_lost and o.switches:
        out.append(
            f"off-CPU: {stacks_lost} of {2 * o.switches} stacks not stored (stack map full or hash "
            f"collisions; {o.limits.get('stacks')} stacks)"
        )
    return tuple(out)

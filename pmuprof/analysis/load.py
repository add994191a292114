"""Load stage: what the user brings (run directory, perf.data, perf script text, folded file) as a Recording."""

from __future__ import annotations

import contextlib
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path
from collections.abc import Mapping

from .. import infile
from ..errors import InputError
from ..model import rundir
from ..model.analysis import Process
from ..model.counters import Counters
from ..model.offcpu import OffCpuProfile
from ..model.series import SeriesSet
from ..model.status import ServerStatus
from ..model.activity import Activity
from ..model.labels import process_root
from ..model.perfscript import DEFAULT_TARGET_COMMS, FoldResult
from ..model.profile import Leaf, Profile
from ..model.run import Run, Source
from ..model.samples import Samples
from ..model.server import ServerFacts
from ..model.stacks import Stacks
from ..packages import apt_install
from ..paths import perf_path
from ..tools.native.fold import fold_file
from ..tools.native.stacksbin import load_folded_stacks
from ..tools.perf import read as perfread, repair
from .archive import folded_without_inline
from .kernel import KERNEL_DSO, recorded_kallsyms

PERF_MAGIC = b"PERFILE2"


@dataclass(frozen=True)
class Choice:
    """Which processes of a system-wide input to keep (none given: the run's targets, else the servers)."""

    pids: tuple[int, ...] = ()
    comms: tuple[str, ...] = ()
    per_thread: bool = False

    @property
    def given(self) -> bool:
        return bool(self.pids or self.comms)


@dataclass(frozen=True)
class Recording:
    """Samples as folded from the input (unnamed code still as '[dso@0xVADDR]') with the run's facts."""

    stacks: Stacks
    leaves: tuple[Leaf, ...]
    run: Run
    counters: Counters = field(default_factory=Counters)
    server: ServerFacts | None = None
    processes: tuple[Process, ...] = ()
    selection: str = ""
    build_ids: Mapping[str, str] = field(default_factory=dict)  # dso path -> build-id the recording saw
    source: str = ""
    reader_argv: tuple[str, ...] = ()
    offcpu: OffCpuProfile | None = None  # a run directory's off-CPU stacks and thread snapshots
    samples: Samples | None = None  # the stacks' rows by thread and second (model/samples.py)
    recovered_callers: int = 0  # samples given the callers perf's walk skipped (model/callers.py)
    series: SeriesSet | None = None  # a run directory's per-second series (model/series.py)
    status: ServerStatus | None = None  # a run directory's server counters (model/status.py)
    activity: Activity | None = None  # a run directory's processlist polls (model/activity.py)


def _kind(path: Path) -> str:
    mode = path.stat().st_mode
    for test, name in (
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "a special file"


def sniff(path: Path) -> str:
    """'rundir' | 'perf.data' | 'perf-script' | 'folded'."""
    if path.is_dir():
        if rundir.is_run_dir(path) or (path / rundir.STACKS).is_file():
            rundir.check_received(path)
            return "rundir"
        raise InputError(
            f"{path}: a directory without run.json or stacks.folded",
            "pass a pmuprof run directory, a perf.data, a perf script text or a folded file",
        )
    if not path.exists():
        raise InputError(f"{path}: no such file or directory", "check the path")
    if not path.is_file():
        raise InputError(
            f"{path}: not a regular file ({_kind(path)})", "pass a run directory, a perf.data or a text file"
        )
    if rundir.is_run_dir(path.parent):  # a file of a run directory is evidence like the directory
        rundir.check_received(path.parent)
        why = infile.evidence_problem(path)
        if why:
            raise InputError(f"{path}: {why}: not read", rundir.RECEIVED_FIX)
    with open(path, "rb") as fh:
        head = fh.read(65536)
    if not head.strip():
        raise InputError(f"{path}: the file is empty", "re-record; an empty capture has nothing to report")
    if head.startswith(PERF_MAGIC):
        if repair.unfinished_size(path) and not rundir.is_run_dir(path.parent):
            raise InputError(
                f"{path}: perf did not close this file (killed, or out of disk): its header says it holds no samples",
                "report its run directory (pmuprof repairs the header there), or record again",
            )
        return "perf.data"
    if b"\0" in head:
        raise InputError(
            f"{path}: binary data that is not a perf.data (no PERFILE2 header)",
            "pass a perf.data, a perf script text or a folded file",
        )
    for line in head.decode("utf-8", "backslashreplace").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        if line[0] in " \t":
            return "perf-script"
    return "folded"


def load(
    path: Path | str, choice: Choice = Choice(), symfs: Path | None = None, work_dir: Path | None = None
) -> Recording | Profile:
    """An analysed Profile for an analysed run directory or a folded file, else a Recording to analyse.
    ``work_dir``: where a perf.data perf could not close is repaired on a copy (the report's output)."""
    path = Path(path)
    kind = sniff(path)
    if kind == "rundir":
        notes: list[str] = []
        if rundir.readable(path / rundir.STACKS, notes) and (symfs is not None or not folded_without_inline(path)):
            return restrict(rundir.load_run_dir(path, load_folded_stacks), choice)
        recording = read_run_dir(path, choice, symfs, work_dir)
        return replace(recording, run=recording.run.with_notes(tuple(notes))) if notes else recording
    if kind == "folded":
        stacks, headers = load_folded_stacks(path)
        run = Run(source=Source(kind="folded", path=str(path), headers=headers))
        return restrict(Profile(stacks, run, source=str(path)), choice)
    sibling = path.parent if rundir.is_run_dir(path.parent) else None
    return read_recording(path, kind, choice, sibling, symfs, work_dir=work_dir)


def read_run_dir(path: Path, choice: Choice, symfs: Path | None = None, work_dir: Path | None = None) -> Recording:
    """A recorded run directory's perf.data with its targets (none of them busy: an empty Recording)."""
    data = path / rundir.PERF_DATA
    notes: list[str] = []
    if not rundir.readable(data, notes):
        raise InputError(
            f"{path}: no {rundir.STACKS} and no {rundir.PERF_DATA} in this run directory"
            + (f" ({rundir.PERF_DATA}: {infile.evidence_problem(data)})" if notes else ""),
            rundir.RECEIVED_FIX if notes else "the capture recorded nothing; capture again",
        )
    return read_recording(data, "perf.data", choice, path, symfs, allow_empty=True, work_dir=work_dir)


def read_recording(
    path: Path,
    kind: str,
    choice: Choice,
    sibling: Path | None,
    symfs: Path | None = None,
    allow_empty: bool = False,
    work_dir: Path | None = None,
) -> Recording:
    """Fold a perf.data or perf script text; inside a run directory, reuse its targets and facts."""
    run = rundir.read_run(sibling) if sibling else Run()
    names = {t.pid: t.label for t in run.targets}
    pids = choice.pids or (tuple(names) if not choice.comms else ())
    comms = choice.comms or (() if pids else DEFAULT_TARGET_COMMS)
    choice = replace(choice, per_thread=choice.per_thread or run.record.per_thread_roots)  # asked at record time
    if kind == "perf.data":
        result, recording, argv, repaired = _fold_perf_data(
            path, pids, comms, choice.per_thread, names, symfs, sibling, run, work_dir
        )
        if repaired:  # perf killed / out of disk
            run = run.with_notes((REPAIRED_NOTE,))
        run = _run_for_perf_data(run, recording)
        build_ids = recording.build_ids
    else:
        result = fold_file(path, pids, comms, choice.per_thread, names, raw_unknown=True)
        build_ids, argv = {}, []
    if not result.kept and not allow_empty:
        raise _nothing_kept(path, kind, result, pids, comms)
    counters, server, _, notes = rundir.read_facts(sibling) if sibling else (Counters(), None, None, ())
    more: list[str] = []
    offcpu = rundir.read_offcpu(sibling, load_folded_stacks, more) if sibling else None
    series = rundir.read_series(sibling, more) if sibling else None
    status = rundir.read_status(sibling, more) if sibling else None
    if sibling:  # read by the native reader, and the kernel's symbols: a refused one is said here
        rundir.readable(sibling / rundir.RECOVERED_CALLERS, more)
        rundir.kept_file(sibling, run.kernel_symbols.file if run.kernel_symbols else "", rundir.KALLSYMS, more)
    activity = rundir.read_activity(sibling, series) if sibling else None
    run = run.with_notes(notes + tuple(more))
    run = _with_fold_facts(run, result, path, kind)
    if choice.pids and not result.pid_known:
        run = run.with_notes(
            (
                f"--pid {', '.join(map(str, choice.pids))} chose threads by name: the text has thread ids "
                "but no pid field, so the process's threads with other names are left out "
                "(`perf script -F +pid` writes the field)",
            )
        )
    processes, selection = _processes(result, run, choice, pids, comms)
    leaves = tuple(Leaf(d, s, o, c) for (d, s, o), c in sorted(result.leaves.items()))
    stacks = Stacks.of(result.stacks)
    samples = result.samples if result.samples is not None and result.samples.matches(stacks) else None
    return Recording(
        stacks,
        leaves,
        run,
        counters,
        server,
        processes,
        selection,
        build_ids,
        str(path),
        tuple(argv),
        offcpu,
        samples,
        result.recovered_callers,
        series,
        status,
        activity,
    )


def _nothing_kept(path: Path, kind: str, result: FoldResult, pids, comms) -> InputError:
    """Why a recording gave no sample, in the terms of what the input lacks."""
    shown = ", ".join(map(str, pids))
    if not result.filtered and result.bad_lines:
        return InputError(
            f"{path}: none of its {result.bad_lines} lines read as perf script samples (a sample "
            "starts with a line 'COMMAND TID TIME: EVENT:')",
            "write it with perf script's default fields, or at least -F comm,tid,time,event,ip,sym,dso",
        )
    if pids and not result.pid_known:
        return InputError(
            f"{path}: no samples of pid {shown}: this perf script text has thread ids but no pid "
            f"field, so --pid keeps the threads named like thread {shown}, and it has none",
            "choose by name with --comm, or write the text with `perf script -F +pid`",
        )
    why = f" of pid {shown}" if pids else (f" of {', '.join(comms)}" if comms else "")
    return InputError(
        f"{path}: no samples{why} in this {kind}",
        "check the recording covers the target (use --pid/--comm to choose processes)",
    )


REPAIRED_NOTE = (
    "perf did not close perf.data (killed, or out of disk): pmuprof read a copy with its data size set "
    "from the file (the run directory's perf.data is left as it is); the last samples may be missing"
)


def _fold_perf_data(
    path: Path, pids, comms, per_thread, names, symfs, sibling: Path | None, run: Run, work_dir: Path | None = None
):
    """(folded result, what the perf.data says of itself, reader argv, bytes a repair found); a run
    directory's perf.data that perf could not close is read from a repaired copy (repair.finished)."""
    perf = perf_path()
    if not perf:
        raise InputError(
            f"{path}: reading a perf.data needs perf, which is not installed",
            f"{apt_install('perf')}, or pass the folded file / perf script text instead",
        )
    with contextlib.ExitStack() as stack:
        repaired = 0
        if sibling is not None:
            path, repaired = stack.enter_context(repair.finished(path, work_dir))
        recording = perfread.describe(perf, path)
        kallsyms = stack.enter_context(
            recorded_kallsyms(
                sibling, run, recorded_build_id=recording.build_ids.get(KERNEL_DSO), symfs=symfs is not None
            )
        )
        callers = sibling / rundir.RECOVERED_CALLERS if sibling is not None else None
        result, argv = perfread.fold_perf_data(
            perf,
            path,
            pids,
            () if pids else comms,
            per_thread,
            names,
            symfs,
            timed=recording.timed,
            kallsyms=kallsyms,
            callers=callers if callers is not None and rundir.readable(callers) else None,
        )
    return result, recording, argv, repaired


def _run_for_perf_data(run: Run, rec: perfread.Recording) -> Run:
    """A captured run keeps its own facts; a bare perf.data gets what its header and evlist say."""
    record = replace(
        run.record,
        event_recorded=run.record.event_recorded or rec.event,
        events_recorded=run.record.events_recorded or tuple(e["name"] for e in rec.events),
        call_graph=run.record.call_graph or rec.call_graph,
    )
    record, said = perfread.recorded_rate(record, rec)  # a run.json older than that check
    run = replace(run, record=record).with_notes(said)
    if not run.targets:  # a bare perf.data: the host it was recorded on
        h = rec.header
        nproc = str(h.get("nproc", ""))
        run = replace(
            run,
            host=replace(
                run.host,
                hostname=h.get("hostname", ""),
                kernel=h.get("kernel", ""),
                perf_version=h.get("perf_version", ""),
                cpu_model=h.get("cpu_model", ""),
                nproc=int(nproc) if nproc.isdigit() else None,
            ),
            command=tuple(h.get("cmdline", "").split()) if h.get("cmdline") else (),
        )
    if not rec.call_graph:
        run = run.with_notes(("perf.data was recorded without call graphs (-g): stacks are one frame deep",))
    return run


def _with_fold_facts(run: Run, result: FoldResult, path: Path, kind: str) -> Run:
    record = run.record
    if not record.event_recorded and result.events:
        record = replace(record, event_recorded=result.events.most_common(1)[0][0])
    run = replace(run, record=record, source=Source(kind=kind, path=str(path)))
    return run.with_notes(tuple(result.warnings()))


_LEFT_OUT_LISTED = 20  # left-out processes named in analysis.json, largest first


def _processes(result: FoldResult, run: Run, choice: Choice, pids, comms) -> tuple[tuple[Process, ...], str]:
    """The kept processes (one root each, never merged by name) and how they were chosen."""
    by_root = Stacks.of(result.stacks).per_root()
    kept = []
    for pid, label in sorted(_roots(result).items()):
        target = next((t for t in run.targets if t.pid == pid), None)
        kept.append(
            Process(
                label=label,
                pid=pid,
                comm=result.names[pid],
                binary=target.exe if target else result.exes.get(pid, ""),
                samples=by_root.get(label, 0),
            )
        )
    named = {p.label for p in kept}
    kept += [Process(label=root, comm=root, samples=n) for root, n in sorted(by_root.items()) if root not in named]
    if choice.given:
        how = "chosen with " + " ".join([f"--pid {p}" for p in choice.pids] + [f"--comm {c}" for c in choice.comms])
    elif run.targets:
        how = "the capture's targets"
    else:
        how = f"processes named (or with a thread named) {' or '.join(comms)} (choose others with --pid / --comm)"
    left = sorted(result.left_out.items(), key=lambda kv: (-kv[1][1], kv[0]))
    kept += [
        Process(label=f"{name}-{pid}", pid=pid, comm=name, samples=n, kept=False)
        for pid, (name, n) in left[:_LEFT_OUT_LISTED]
    ]
    if result.filtered:
        how += f"; {result.filtered:,} samples of other processes left out"
        if left:
            how += " (" + ", ".join(f"pid {pid} {name} {n:,}" for pid, (name, n) in left[:3])
            how += f" and {len(left) - 3} more)" if len(left) > 3 else ")"
            how += f"; report one of them with --pid {left[0][0]}"
    return tuple(kept), how


def _roots(result: FoldResult) -> dict[int, str]:
    """pid -> root label as the folder wrote it (comm, or comm-pid when two kept processes share a comm)."""
    names = result.names
    shared = len(set(names.values())) < len(names)
    return {pid: process_root(name, pid if shared else None) for pid, name in names.items() if pid >= 0}


def restrict(profile: Profile, choice: Choice) -> Profile:
    """Keep the chosen processes of an already folded profile (by label, comm or pid)."""
    if not choice.given:
        return profile
    wanted = {t.label for t in profile.run.targets if t.pid in choice.pids}
    wanted |= {p.label for p in profile.analysis.processes if p.pid in choice.pids}
    roots = [
        r
        for r in profile.processes()
        if r in wanted
        or r in choice.comms
        or r.rsplit("-", 1)[0] in choice.comms
        or (r.rsplit("-", 1)[-1].isdigit() and int(r.rsplit("-", 1)[-1]) in choice.pids)
    ]
    if not roots:
        raise InputError(
            f"{profile.source}: none of the chosen processes are in this profile",
            f"processes present: {', '.join(profile.processes()[:8])}",
        )
    return profile.restrict(roots)

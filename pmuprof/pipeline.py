"""The report pipeline, one way for every input: load → resolve binaries → analyse → findings → writers.

``capture`` and ``record`` run the same stages on the run directory they recorded (``materialize``),
so a report never depends on whether its input came from a live capture.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from collections.abc import Callable, Sequence

from . import deadline, outfile
from .capture import diskroom
from .analysis import threads
from .analysis.analyse import analyse, with_quality
from .analysis.archive import kept_symfs, with_symfs
from .analysis.binaries import Lookup
from .analysis.load import Choice, Recording, load, read_run_dir
from .errors import InputError
from .findings import engine
from .findings.diagnosis import Diagnosis
from .findings.model import Finding
from .findings.schema import Rule
from .model import rundir
from .model.folded import save_folded
from .model.samples import write_tsv
from .model.profile import Profile
from .report import findings_json, write_outputs


@dataclass(frozen=True)
class Options:
    """What the user chose for reading an input: which processes, where the binaries are."""

    choice: Choice = field(default_factory=Choice)
    lookup: Lookup = field(default_factory=Lookup)


@dataclass(frozen=True)
class Result:
    profile: Profile
    diagnosis: Diagnosis
    paths: dict[str, Path]

    @property
    def findings(self) -> list[Finding]:
        return list(self.diagnosis.findings)


def build_profile(path: Path | str, options: Options = Options(), work_dir: Path | None = None) -> Profile:
    """Any input as an analysed Profile (a run directory re-read where its binaries are not installed uses
    the copies it kept). ``work_dir``: where a copy of the input may be repaired (the report's output
    directory; a private temporary one when None): a run directory is evidence, never written."""
    notes: list[str] = []
    with kept_symfs(Path(path), options.lookup.symfs, notes=notes) as symfs:
        options = with_symfs(options, symfs)
        loaded = load(Path(path), options.choice, options.lookup.symfs, work_dir)
        if notes:
            loaded = replace(loaded, run=loaded.run.with_notes(tuple(notes)))
        return analyse(loaded, options.lookup) if isinstance(loaded, Recording) else with_quality(loaded)


def profile_for_report(path: Path | str, options: Options = Options()) -> Profile:
    """``build_profile`` with what only reports show joined in (the thread and processlist tables)."""
    return threads.attach(build_profile(path, options))


def materialize(
    run_dir: Path,
    options: Options = Options(),
    log: Callable[[str], None] = lambda _m: None,
    keep_perf_data: bool = True,
) -> Profile:
    """Fold and analyse a recorded run directory: write stacks.folded, leaves.tsv and analysis.json into it.
    ``keep_perf_data`` False (--no-keep-perf-data): perf.data is deleted once they are written, never before
    (a failed analysis leaves it for `pmuprof report`)."""
    log("folding stacks and analysing binaries")
    notes: list[str] = []
    with (
        deadline.cpu_bounded("folding and analysing the recording"),
        kept_symfs(Path(run_dir), options.lookup.symfs, refold=True, notes=notes) as symfs,
    ):
        options = with_symfs(options, symfs)
        recording = read_run_dir(Path(run_dir), options.choice, options.lookup.symfs, Path(run_dir))
        if notes:
            recording = replace(recording, run=recording.run.with_notes(tuple(notes)))
        profile = analyse(recording, options.lookup)
    write_analysed(Path(run_dir), profile)
    if not keep_perf_data:
        (Path(run_dir) / rundir.PERF_DATA).unlink(missing_ok=True)
    return profile


def write_analysed(run_dir: Path, profile: Profile) -> None:
    """The analysed part of a run directory (the one place that writes it)."""
    run = profile.run
    headers = {
        "pmuprof_version": run.pmuprof_version,
        "event": run.record.event_recorded,
        "frequency_hz": f"{run.record.frequency} Hz" if run.record.frequency else "",
        "mode": run.mode,
        "unit": profile.unit,
        "targets": " ".join(f"{t.label}={t.pid}" for t in run.targets),
    }
    lines = save_folded(run_dir / rundir.STACKS, profile.stacks, {k: v for k, v in headers.items() if v})
    if profile.samples is not None:
        with outfile.open_text(run_dir / rundir.SAMPLES) as out:
            write_tsv(out, profile.samples, lines)
    else:
        (run_dir / rundir.SAMPLES).unlink(missing_ok=True)
    leaves: dict[tuple[str, str, int], int] = {}
    for leaf in profile.leaves:
        key = (leaf.dso, leaf.symbol, leaf.offset)
        leaves[key] = leaves.get(key, 0) + leaf.count
    rundir.write_leaves(run_dir / rundir.LEAVES, leaves)
    rundir.write_typed(run_dir / rundir.ANALYSIS, profile.analysis)


def report_profile(profile: Profile, out_dir: Path, rules: Sequence[Rule] | None = None) -> Result:
    """Judge an analysed profile (by ``rules``, else the rules in use) and write its reports."""
    with deadline.cpu_bounded("judging the profile and writing the report"):
        profile = threads.attach(profile)
        diagnosis = engine.diagnose(profile, rules)
        outfile.ensure_dir(out_dir)
        return Result(profile, diagnosis, write_outputs(profile, diagnosis, out_dir))


def report_run(
    run_dir: Path,
    rules: Sequence[Rule] | None = None,
    log: Callable[[str], None] = lambda _m: None,
    keep_perf_data: bool = True,
) -> Result:
    """What capture, watch and demo do once they have recorded: fold and analyse the run directory, judge it
    (by ``rules``, else the rules in use) and write its reports into it (perf.data deleted once folded when
    not ``keep_perf_data``)."""
    return report_profile(materialize(run_dir, log=log, keep_perf_data=keep_perf_data), run_dir, rules)


def report_input(
    input_path: Path | str, out_dir: Path | str, options: Options = Options(), allow_empty: bool = False
) -> Result:
    """Write report.html, findings.json and report.md for any supported input.

    ``allow_empty``: a capture of an idle server still gets a report (its warning says why it is empty);
    so does one whose threads were all off the CPU (an --off-cpu capture of a server blocked on locks).
    """
    with deadline.cpu_bounded("reading and analysing the input"):
        profile = build_profile(input_path, options, Path(out_dir))
    _sweep_room(Path(input_path))
    if not profile.total and not allow_empty and not (profile.offcpu and profile.offcpu.total_us):
        raise InputError(f"{input_path}: the profile is empty", "record while the server is busy")
    return report_profile(profile, Path(out_dir))


def _sweep_room(path: Path) -> None:
    """A run directory of this user's that a killed capture left its room in (.pmuprof-room, 6 MiB on two
    CPUs) gets the space back: the room is pmuprof's scratch, not evidence (diskroom.stale proves it)."""
    try:
        mine = path.is_dir() and not path.is_symlink() and path.stat().st_uid == os.geteuid()
    except OSError:
        return
    if mine and rundir.is_run_dir(path):
        diskroom.sweep(path)


def findings_json_text(input_path: Path | str, options: Options = Options()) -> str:
    with deadline.cpu_bounded("reading, analysing and judging the input"):
        profile = build_profile(input_path, options)
        diagnosis = engine.diagnose(profile)
        return findings_json(profile, diagnosis)


def with_choice(options: Options, **changes) -> Options:
    return replace(options, choice=replace(options.choice, **changes))

"""Analyse stage: a Recording → a Profile with binaries resolved, unnamed code grouped, skid corrected."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import replace

from ..model.analysis import Analysis, Binary
from ..model.labels import is_unnamed, parse_raw
from ..model.profile import Profile
from ..model.run import FeatureOff
from ..packages import apt_install
from ..tools.native import helper
from . import binaries as binmod, quality, skid, unnamed
from .inline import inline_off
from .kernel import KERNEL_DSO, kernel_warnings
from .load import Recording

MAX_BINARIES = 40  # resolve at most this many DSOs, most samples first
PROBLEM_SHARE = 0.01  # say a binary's problem when it holds at least this share of the samples
IDLE = (
    "no samples of the target were recorded: it was idle (or off-CPU) during the capture; try a longer "
    "--duration while the problem is happening"
)
HELPER_FIX = f"build the native helper ({apt_install('compiler', 'elfutils', 'capstone')}; make -C native)"


def analyse(rec: Recording, lookup: binmod.Lookup = binmod.Lookup()) -> Profile:
    """Everything the report needs from the binaries, done the same way for every kind of input."""
    total = rec.stacks.total
    binaries = binmod.resolve(_wanted(rec), _recorded(rec), lookup, _builds(rec))
    stacks, rows, functions, group_off, unclear = unnamed.group_rows(rec.stacks, binaries, helper.funcs, _mapped(rec))
    samples = rec.samples.remap(rows) if rec.samples is not None and rows is not None else rec.samples
    corrected, summary, skid_off = skid.try_correct(rec.leaves, binaries, helper.skid, total)
    off = []
    if group_off:
        off.append(FeatureOff("grouping unnamed code into functions", group_off, HELPER_FIX))
    if skid_off:
        off.append(FeatureOff("skid correction", skid_off, HELPER_FIX))
    off += inline_off(rec.reader_argv, rec.run.warnings)
    processes = tuple(p for p in rec.processes if p.samples) or rec.processes
    qual = tuple(quality.for_process(stacks, p.label, rec.run) for p in processes if p.kept)
    analysis = Analysis(
        reader_argv=rec.reader_argv,
        processes=processes,
        selection=rec.selection,
        binaries=binaries,
        unnamed=functions,
        skid_functions=corrected,
        skid=summary,
        quality=qual,
        warnings=(() if total else (IDLE,))
        + problems(binaries, total, rec)
        + unclear
        + skid.left_out(binaries)
        + kernel_warnings(qual, rec.build_ids.get(KERNEL_DSO), rec.run.host.kernel, kept=rec.run.kernel_symbols),
        features_off=tuple(off),
        recovered_callers=rec.recovered_callers,
    )
    return Profile(
        stacks,
        rec.run,
        rec.counters,
        rec.server,
        analysis,
        rec.leaves,
        rec.source,
        offcpu=rec.offcpu,
        samples=samples,
        series=rec.series,
        status=rec.status,
        activity=rec.activity,
    )


def with_quality(profile: Profile) -> Profile:
    """A profile loaded already folded (a folded file, a 0.1 run directory) gets its stack quality too."""
    if profile.analysis.quality:
        return profile
    qual = tuple(quality.for_process(profile.stacks, p, profile.run) for p in profile.processes())
    return replace(profile, analysis=replace(profile.analysis, quality=qual))


def _wanted(rec: Recording) -> dict[str, int]:
    """DSO paths worth resolving -> samples whose leaf is in them (targets and unnamed code always)."""
    by_dso: Counter[str] = Counter()
    for leaf in rec.leaves:
        by_dso[leaf.dso] += leaf.count
    bases = {parsed[0] for f in rec.stacks.frames if is_unnamed(f) and (parsed := parse_raw(f))}
    paths = set(rec.build_ids) | {t.exe for t in rec.run.targets if t.exe}
    paths |= {m.path for t in rec.run.targets for m in t.maps}
    for path in paths:
        if os.path.basename(path) in bases or path in {t.exe for t in rec.run.targets}:
            by_dso.setdefault(path, 0)
    ranked = sorted(((p, n) for p, n in by_dso.items() if p.startswith("/")), key=lambda kv: (-kv[1], kv[0]))
    keep = dict(ranked[:MAX_BINARIES])
    keep.update({p: n for p, n in ranked if os.path.basename(p) in bases})  # never drop unnamed code's binaries
    return keep


def _builds(rec: Recording) -> dict[str, tuple[str, ...]]:
    """Paths the targets ran as several builds (an upgrade in progress) -> those build-ids: one Binary each."""
    ids: dict[str, list[str]] = {}
    for t in rec.run.targets:
        if t.exe and t.build_id:
            ids.setdefault(t.exe, []).append(t.build_id)
    return {p: tuple(dict.fromkeys(v)) for p, v in ids.items() if len(set(v)) > 1}


def _mapped(rec: Recording) -> dict[str, binmod.Mapped]:
    """Per kept process root whose mappings the capture recorded: the paths it mapped and its exe's build-id."""
    targets = {t.pid: t for t in rec.run.targets}
    out = {}
    for p in rec.processes:
        t = targets.get(p.pid) if p.pid is not None else None
        if t is not None and (t.exe or t.maps):
            paths = frozenset(({t.exe} if t.exe else set()) | {m.path for m in t.maps})
            out[p.label] = binmod.Mapped(paths, t.exe, t.build_id)
    return out


def _recorded(rec: Recording) -> dict[str, str]:
    out = dict(rec.build_ids)
    out.update({t.exe: t.build_id for t in rec.run.targets if t.exe and t.build_id})
    return out


def problems(binaries: tuple[Binary, ...], total: int, rec: Recording) -> tuple[str, ...]:
    """One line per binary problem that matters: a target's, or one holding ≥ 1 % of the samples."""
    exes = {t.exe for t in rec.run.targets}
    matter = [b for b in binaries if b.path in exes or (total and b.samples / total >= PROBLEM_SHARE)]
    lines = [b.problem for b in matter if b.problem]
    paths = [b.path for b in matter if b.file and b.verified is None and b.found_via != "--binary"]
    names = [os.path.basename(p) for p in paths]  # the full path where two binaries share a file name
    unverified = list(dict.fromkeys(n if names.count(n) == 1 else p for p, n in zip(paths, names)))
    if unverified and rec.run.source.kind == "perf-script":
        lines.append(
            f"a perf script text has no build-ids: {', '.join(unverified)} read at the paths it names, "
            "not verified (report the perf.data itself to have them checked)"
        )
    elif unverified and not rec.run.targets:
        lines.append(
            f"{', '.join(unverified)}: no build-id in the binary or the recording; used the file at the "
            "recorded path, unverified"
        )
    return tuple(dict.fromkeys(lines))

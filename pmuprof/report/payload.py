"""Build the report payload: one frozen value that report.html and report.md read (findings.json is written
from the diagnosis itself)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any
from collections.abc import Callable, Iterable, Mapping

from ..findings.diagnosis import Diagnosis
from ..findings.latches import LatchWaits
from ..findings.model import Finding, FindingJSON
from ..model.analysis import SkidFunction
from ..model.profile import Profile
from ..model.stacks import Stacks, top_frames
from ..model.threadtables import ThreadTables
from . import seconds
from .counters import counters_section
from .evidence import evidence_rows, levels_text
from .facts import mysql_facts, numa_text, summary
from .servercounters import ServerCounters, server_counters
from .flame import build_tree_rows
from .flametrie import Trie
from .rows import (
    ComparisonRow,
    CountersSection,
    FlameTree,
    GroupRow,
    Hotspot,
    InstructionRow,
    LatchChain,
    LatchRow,
    NameShare,
    Shown,
    SecondsStrip,
    ShownFinding,
    SnapshotRow,
    StateRow,
    TopGroup,
    TopRow,
)
from .summaryrows import MysqlFacts, Summary, Verdict, WaitingRow
from .wallclock import state_totals, thread_groups, wall_stacks
from .verdict import checks, verdict
from .waiting import waiting
from .who import server_version_of, who

TOP_FUNCTIONS = 60


def _share(count: float, total: float) -> float:
    return round(count / total, 6) if total else 0.0


def top_functions(stacks: Stacks, limit: int = TOP_FUNCTIONS) -> list[TopRow]:
    """Hottest functions by self and by inclusive samples (union of both top lists)."""
    total, frames = stacks.total, stacks.frames
    own, incl = stacks.frame_self(), stacks.frame_inclusive()
    ids = set(top_frames(frames, own, limit)) | set(top_frames(frames, incl, limit))
    return [
        TopRow(
            name=frames[i],
            self=int(own[i]),
            inclusive=int(incl[i]),
            self_share=_share(int(own[i]), total),
            inclusive_share=_share(int(incl[i]), total),
        )
        for i in sorted(ids, key=lambda i: (-own[i], -incl[i], frames[i]))
    ]


def _per_process_top(profile: Profile, processes: list[str]) -> list[TopGroup]:
    groups = [TopGroup(process="", total=profile.total, rows=top_functions(profile.stacks))]
    if len(processes) > 1:
        for proc in processes:  # the process's stacks alone (its samples table is not needed here)
            part = profile.process_stacks(proc)
            groups.append(TopGroup(process=proc, total=part.total, rows=top_functions(part)))
    return groups


def comparison(profile: Profile, processes: list[str], ipc: Mapping[str, float]) -> list[ComparisonRow]:
    """One row per process when several were profiled: samples, top frames, IPC, NUMA placement."""
    if len(processes) < 2:
        return []
    total = profile.total
    rows: list[ComparisonRow] = []
    for proc in processes:
        part = profile.process_stacks(proc)  # its stacks alone: no copy of its sample table
        target = profile.target(proc)
        top = part.top_self(3)
        rows.append(
            {
                "process": proc,
                "pid": target.pid if target else None,
                "samples": part.total,
                "share": _share(part.total, total),
                "top": [NameShare(name=n, share=_share(c, part.total)) for n, c in top],
                "ipc": ipc.get(proc),
                "numa": numa_text(target),
                "threads": target.threads if target else None,
            }
        )
    return rows


def _hotspot(fn: SkidFunction, total: int) -> Hotspot:
    """One skid-corrected function for the report: its instructions with samples, raw and corrected."""
    insns = fn.instructions
    rows: list[InstructionRow] = []
    for idx, ins in enumerate(insns):
        if not (ins.raw or ins.corrected):
            continue
        nxt = insns[idx + 1].text if idx + 1 < len(insns) else None
        rows.append(
            {
                "address": ins.address,
                "offset": ins.offset,
                "text": ins.text,
                "kind": ins.kind,
                "raw": ins.raw,
                "corrected": ins.corrected,
                "ambiguous": ins.ambiguous,
                "moved_in": max(ins.corrected - ins.raw, 0) if ins.kind else 0,
                "next_text": nxt,
            }
        )
    return {
        "symbol": fn.symbol,
        "binary": fn.binary,
        "error": fn.error,
        "samples": fn.samples,
        "share": _share(fn.samples, total),
        "moved": fn.moved,
        "raw_total": sum(i.raw for i in insns),
        "corrected_total": sum(i.corrected for i in insns),
        "instructions": rows,
    }


def hotspots(profile: Profile, top: int = 5) -> list[Hotspot]:
    """The report's "instruction hot spots (skid-corrected)": the functions with most samples."""
    fns = sorted((f for f in profile.analysis.skid_functions if f.instructions), key=lambda f: (-f.samples, f.symbol))
    return [_hotspot(f, profile.total) for f in fns[:top]]


def findings_list(findings: Iterable[Finding]) -> list[FindingJSON]:
    return [f.to_dict() for f in findings]


def shown_findings(findings: Iterable[Finding]) -> list[ShownFinding]:
    """findings_list plus what the report shows of each: its declared evidence in words, the levels it met."""
    return [
        ShownFinding(
            **f.to_dict(),
            shown=Shown(evidence=evidence_rows(f), levels=levels_text(f), checks=checks(f.to_dict()["confidence"])),
        )
        for f in findings
    ]


def groups(diagnosis: Diagnosis, shown: list[ShownFinding]) -> list[GroupRow]:
    """The diagnosis's groups (cause → consequences, fix first) over the shown findings, in findings order."""
    at = {id(f): row for f, row in zip(diagnosis.findings, shown)}
    return [GroupRow(cause=at[id(g.cause)], consequences=[at[id(f)] for f in g.consequences]) for g in diagnosis.groups]


def latch_rows(latches: Mapping[str, tuple[LatchWaits, ...]] | None, min_share: float = 0.001) -> list[LatchRow]:
    """The "spin and waits by latch" table: per process, each latch with its share, how, and from where."""
    rows: list[LatchRow] = []
    for process, waits in sorted((latches or {}).items()):
        for w in waits:
            if w.share < min_share:
                continue
            rows.append(
                {
                    "process": process,
                    "latch": w.latch,
                    "name": w.name,
                    "samples": w.count,
                    "share": w.share,
                    "kinds": dict(sorted(w.kinds.items())),
                    "modes": dict(sorted(w.modes.items())),
                    "rule": w.rule or "",
                    "chains": [LatchChain(text=w.chain_text(c), samples=c.count) for c in w.chains],
                }
            )
    return rows


@dataclass(frozen=True)
class WallView:
    """The wall-clock card: per process and thread state, seconds and share; ``note`` says what is left out."""

    states: list[StateRow]
    note: str = ""


@dataclass(frozen=True)
class ReportPayload:
    """Everything the report shows, decided once: report.html's context and embedded JSON, report.md's input.

    Sorted, no clock reads: the same profile and diagnosis give the same bytes."""

    title: str
    summary: Summary  # facts.summary: samples, event, duration, host, capture details, warnings
    verdict: Verdict  # verdict.verdict: the first screen (headline, cause, busy function, waiting note)
    flame: FlameTree  # flame.build_tree_rows: the interactive graph's names and node arrays
    top_functions: list[TopGroup]  # per process ("" first: all)
    counters: CountersSection  # per-process IPC and the counter table
    findings: list[ShownFinding]  # shown_findings, in the engine's order
    groups: list[GroupRow]  # {cause, consequences} over those rows
    latches: list[LatchRow]  # latch_rows
    instruction_hotspots: list[Hotspot]  # hotspots: skid-corrected instructions
    comparison: list[ComparisonRow]  # one row per process when several were profiled
    mysql: MysqlFacts  # facts.mysql_facts: the server's variables, status and processlist as read
    wall: WallView | None  # None: no off-CPU time was recorded
    offcpu_threads: list[SnapshotRow]  # wallclock.thread_groups: what the threads were doing, per snapshot
    seconds: SecondsStrip | None  # seconds.strip: the per-second strip (None: the input has no sample times)
    threads: ThreadTables | None  # the per-thread tables the analyse stage joined (profile.threads)
    kind: str = "report"  # report.js: which page this is
    server_counters: ServerCounters | None = None  # servercounters.server_counters: status.json's (None: no file)

    def as_json(self) -> dict[str, Any]:
        """The payload as JSON data (embedded in report.html for report.js); a run without status.json has no
        ``server_counters`` key, so its report reads as before."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["wall"] = None if self.wall is None else {"states": self.wall.states, "note": self.wall.note}
        if self.server_counters is None:
            del out["server_counters"]
        return out


def build_payload(
    profile: Profile, diagnosis: Diagnosis, max_flame_nodes: int = 200_000, trie: Callable[[], Trie] | None = None
) -> ReportPayload:
    """Everything the report shows, as plain data (sorted, no clock reads: same input, same bytes);
    ``trie``: gives the profile's flame trie when the caller builds and keeps it (asked for once)."""
    processes = profile.processes()
    counters = counters_section(profile.counters)
    shown = shown_findings(diagnosis.findings)
    found_groups = groups(diagnosis, shown)
    head = summary(profile, processes)
    top = _per_process_top(profile, processes)
    profile.stacks.release_postings()  # the findings are done with them: room for the flame tree
    flame, tree_rows = build_tree_rows([profile.stacks], max_flame_nodes, trie=trie() if trie else None)
    note = waiting(profile)
    found = verdict(
        shown,
        found_groups[0] if diagnosis.top else None,
        head,
        top[0]["rows"],
        frozenset(flame["names"]),
        diagnosis.busiest,
        WaitingRow(sentence=note.sentence(), command=note.command, sessions=note.sessions, busy_cpus=note.busy_cpus)
        if note
        else None,
        # the process it is about, in words; of several processes, the fix is for that one's server
        who(profile, label) if (label := diagnosis.top.process if diagnosis.top else "") else "",
        server_version_of(profile, label) if label and len(processes) > 1 else None,
    )
    wall, why = wall_stacks(profile)
    return ReportPayload(
        title="pmuprof report" + (f": {', '.join(processes[:3])}" if processes else ""),
        summary=head,
        verdict=found,
        flame=flame,
        top_functions=top,
        counters=counters,
        findings=shown,
        groups=found_groups,
        latches=latch_rows(diagnosis.latches),
        instruction_hotspots=hotspots(profile),
        comparison=comparison(profile, processes, counters["ipc"]),
        mysql=mysql_facts(profile.server),
        wall=WallView(state_totals(wall), why) if profile.offcpu is not None else None,
        offcpu_threads=thread_groups(profile.offcpu),
        seconds=seconds.strip(profile, diagnosis, tree_rows),
        threads=profile.threads,
        server_counters=server_counters(profile.status),
    )

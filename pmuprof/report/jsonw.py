"""findings.json (the contract): pmuprof version, what was profiled, and the ordered findings."""

from __future__ import annotations

import json
from typing import Any

from .. import __version__
from ..findings.diagnosis import Diagnosis
from ..findings.facts import server_version
from ..model.profile import Profile
from .facts import event_names
from .payload import findings_list, latch_rows
from .servercounters import ServerCountersJSON, findings_part, server_counters
from .who import who


def profile_facts(profile: Profile) -> dict[str, Any]:
    """The ``profile`` object of findings.json: samples, event, main process and how it was captured."""
    run = profile.run
    processes = profile.processes()
    requested, recorded = event_names(profile)
    return {
        "samples": profile.total,
        "event": recorded or profile.unit,
        "event_requested": requested,
        "process": processes[0] if processes else "",
        "processes": processes,
        "pids": [t.pid for t in run.targets]
        or [p.pid for p in profile.analysis.processes if p.pid is not None and p.kept],
        "duration_s": run.duration_s,
        "frequency": run.record.frequency,
        **({"frequency_requested": run.record.frequency_requested} if run.record.frequency_requested else {}),
        "call_graph": run.record.call_graph,
        "mode": run.mode,
        "source": profile.source,
        **dict(zip(("server_version", "server_version_from"), server_version(profile))),
        "warnings": list(dict.fromkeys(run.warnings + profile.analysis.warnings)),
        "skid": _skid(profile),
        **_server_counters(profile),
    }


def _server_counters(profile: Profile) -> dict[str, ServerCountersJSON]:
    """``server_counters`` (status.json's key counters over the window), only for runs that have the file."""
    part = findings_part(server_counters(profile.status))
    return {"server_counters": part} if part is not None else {}


def _skid(profile: Profile) -> dict[str, Any] | None:
    """Skid-corrected shares and the corrected functions (symbol, samples, moved), hottest first."""
    analysis = profile.analysis
    if analysis.skid is None:
        return None
    fns = sorted(analysis.skid_functions, key=lambda f: (-f.samples, f.symbol))
    return {
        "pause_share": analysis.skid.pause_share,
        "fence_share": analysis.skid.fence_share,
        "lock_share": analysis.skid.lock_share,
        "functions": [{"symbol": f.symbol, "samples": f.samples, "moved": f.moved} for f in fns],
    }


FORMAT_VERSION = (
    4  # 4: confidence says what the server's counters confirmed or refuted (confirmed, not_confirmed, refuted,
    # decided_by, would_decide: format 3's corroborated / not_corroborated); 3: a finding's fix is a list of
    # typed steps; 2: format_version, host, captured_at and verdict at the top
)


def verdict_facts(profile: Profile, diagnosis: Diagnosis) -> dict[str, Any]:
    """The verdict a script reads first: the cause the engine put first, or why there is none."""
    top = diagnosis.top
    if top is not None:
        return {
            "status": "problem",
            "rule": top.rule,
            "title": top.title,
            "severity": top.severity,
            "share": top.share,
            "process": top.process,
            "who": who(profile, top.process),  # pid, where it listens, datadir, version (report/who.py)
        }
    return {
        "status": "healthy" if profile.total else "empty",
        "rule": None,
        "title": None,
        "severity": None,
        "share": None,
        "process": None,
        "who": None,
    }


def findings_document(profile: Profile, diagnosis: Diagnosis) -> dict[str, Any]:
    run = profile.run
    return {
        "format_version": FORMAT_VERSION,
        "pmuprof_version": __version__,
        "host": run.host.hostname or None,  # None: not known (a bare perf.data re-read elsewhere)
        "captured_at": run.started or None,
        "verdict": verdict_facts(profile, diagnosis),
        "profile": profile_facts(profile),
        "findings": findings_list(diagnosis.findings),
        "latches": latch_rows(diagnosis.latches),
    }


def findings_json(profile: Profile, diagnosis: Diagnosis) -> str:
    """The text of findings.json, also what ``pmuprof report --json`` prints (sorted keys, newline-terminated)."""
    return json.dumps(findings_document(profile, diagnosis), indent=2, sort_keys=True, ensure_ascii=False) + "\n"

"""findings.json (the contract): pmuprof version, what was profiled, and the ordered findings."""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from .. import __version__
from ..findings.model import Finding
from ..model.profile import Profile
from .facts import event_names
from .payload import findings_list


def profile_facts(profile: Profile) -> dict[str, Any]:
    """The ``profile`` object of findings.json: samples, event, main process and how it was captured."""
    run = profile.run or {}
    record = run.get("record") if isinstance(run.get("record"), Mapping) else {}
    processes = profile.processes()
    requested, recorded = event_names(profile)
    return {
        "samples": profile.total,
        "event": recorded or profile.unit,
        "event_requested": requested,
        "process": processes[0] if processes else "",
        "processes": processes,
        "pids": [t.get("pid") for t in run.get("targets") or [] if isinstance(t, Mapping) and "pid" in t],
        "duration_s": run.get("duration_s"),
        "frequency": record.get("frequency"),
        "call_graph": record.get("call_graph") or "",
        "mode": run.get("mode") or "",
        "source": profile.source,
        "server_version": ((profile.mysql or {}).get("server") or {}).get("version") or "",
        "warnings": [str(w) for w in run.get("warnings") or []],
    }


def findings_document(profile: Profile, findings: Iterable[Finding]) -> dict[str, Any]:
    return {
        "pmuprof_version": __version__,
        "profile": profile_facts(profile),
        "findings": findings_list(findings),
    }


def findings_json(profile: Profile, findings: Iterable[Finding]) -> str:
    """The text of findings.json, also what ``pmuprof report --json`` prints (sorted keys, newline-terminated)."""
    return json.dumps(findings_document(profile, findings), indent=2, sort_keys=True, ensure_ascii=False) + "\n"

"""Build the report payload: one JSON-able dict that every writer (html, json, markdown) reads."""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable, Mapping

from ..findings.model import Finding, ordered
from ..model.profile import Profile
from .counters import counters_section
from .facts import mysql_facts, numa_text, summary, target_for
from .flame import build_tree

TOP_FUNCTIONS = 60


def _share(count: float, total: float) -> float:
    return round(count / total, 6) if total else 0.0


def top_functions(profile: Profile, limit: int = TOP_FUNCTIONS) -> list[dict[str, Any]]:
    """Hottest functions by self and by inclusive samples (union of both top lists)."""
    total = profile.total
    self_c = profile.self_counts()
    incl_c = profile.inclusive_counts()

    def top(counter: Counter[str]) -> list[str]:
        return [n for n, _ in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]]

    names = sorted(set(top(self_c)) | set(top(incl_c)), key=lambda n: (-self_c.get(n, 0), -incl_c.get(n, 0), n))
    return [
        {"name": n, "self": self_c.get(n, 0), "inclusive": incl_c.get(n, 0),
         "self_share": _share(self_c.get(n, 0), total), "inclusive_share": _share(incl_c.get(n, 0), total)}
        for n in names
    ]


def _per_process_top(profile: Profile, processes: list[str]) -> list[dict[str, Any]]:
    groups = [{"process": "", "total": profile.total, "rows": top_functions(profile)}]
    if len(processes) > 1:
        for proc in processes:
            part = profile.restrict([proc])
            groups.append({"process": proc, "total": part.total, "rows": top_functions(part)})
    return groups


def comparison(profile: Profile, processes: list[str], ipc: Mapping[str, float]) -> list[dict[str, Any]]:
    """One row per process when several were profiled: samples, top frames, IPC, NUMA placement."""
    if len(processes) < 2:
        return []
    total = profile.total
    rows = []
    for proc in processes:
        part = profile.restrict([proc])
        target = target_for(profile.run, proc)
        top = sorted(part.self_counts().items(), key=lambda kv: (-kv[1], kv[0]))[:3]
        rows.append({
            "process": proc,
            "pid": target.get("pid"),
            "samples": part.total,
            "share": _share(part.total, total),
            "top": [{"name": n, "share": _share(c, part.total)} for n, c in top],
            "ipc": ipc.get(proc) if proc in ipc else ipc.get(str(target.get("label") or "\0")),
            "numa": numa_text(target),
            "threads": target.get("threads"),
        })
    return rows


def _flatten_hotspots(data: Any, binary: str = "") -> list[Mapping[str, Any]]:
    """Function entries from skid.json or helper output: a list, {"functions": [...]}, or nested lists."""
    if isinstance(data, Mapping):
        if isinstance(data.get("instructions"), list) or "symbol" in data:
            return [{**data, "binary": data.get("binary") or binary}]
        for key in ("functions", "hotspots", "binaries", "results"):
            if isinstance(data.get(key), list):
                return _flatten_hotspots(data[key], str(data.get("binary") or binary))
        return []
    if isinstance(data, list):
        return [f for item in data for f in _flatten_hotspots(item, binary)]
    return []


def _instruction(ins: Mapping[str, Any]) -> dict[str, Any]:
    text = str(ins.get("text") or "")
    kind = str(ins.get("kind") or "")
    if not kind and any(w in text.lower() for w in ("pause", "fence", "lock ")):
        kind = "pause" if "pause" in text.lower() else "fence"
    return {
        "address": ins.get("address"), "offset": ins.get("offset"), "text": text, "kind": kind,
        "raw": int(ins.get("raw") or 0), "corrected": int(ins.get("corrected") or 0),
        "ambiguous": bool(ins.get("ambiguous")),
    }


def _hotspots(data: Any) -> list[dict[str, Any]]:
    """Skid-corrected per-instruction histograms (pmuprof/skid.py, helper ``skid``), totals added."""
    out = []
    for item in _flatten_hotspots(data):
        rows = [_instruction(i) for i in item.get("instructions") or [] if isinstance(i, Mapping)]
        if not rows and not item.get("error"):
            continue
        out.append({
            "symbol": str(item.get("symbol") or ""), "binary": str(item.get("binary") or ""),
            "error": str(item.get("error") or ""),
            "raw_total": sum(r["raw"] for r in rows), "corrected_total": sum(r["corrected"] for r in rows),
            "instructions": rows,
        })
    return sorted(out, key=lambda h: (-h["raw_total"], h["symbol"], h["binary"]))


def findings_list(findings: Iterable[Finding]) -> list[dict[str, Any]]:
    return [f.to_dict() for f in ordered(list(findings))]


def build_payload(profile: Profile, findings: Iterable[Finding], extras: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Everything the report shows, as plain data (sorted, no clock reads: same input, same bytes).

    ``extras`` may carry ``instruction_hotspots`` (skid-corrected histograms, see
    pmuprof/skid.py), ``title`` and ``max_flame_nodes``.
    """
    extras = dict(extras or {})
    processes = profile.processes()
    counters = counters_section(profile.counters)
    return {
        "kind": "report",
        "title": str(extras.get("title") or "pmuprof report" + (f": {', '.join(processes[:3])}" if processes else "")),
        "summary": summary(profile, processes),
        "flame": build_tree([profile.stacks], int(extras.get("max_flame_nodes") or 200_000)),
        "top_functions": _per_process_top(profile, processes),
        "counters": counters,
        "findings": findings_list(findings),
        "instruction_hotspots": _hotspots(extras.get("instruction_hotspots")),
        "comparison": comparison(profile, processes, counters["ipc"]),
        "mysql": mysql_facts(profile.mysql),
    }

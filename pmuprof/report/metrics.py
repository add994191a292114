"""Prometheus text-format metrics of one run, for node_exporter's textfile collector (pure).

Named by Prometheus' conventions: 0-1 values end in ``_ratio``, one denominator per name; the profiled
server is the ``server`` label (``instance`` is the scrape target's, and node_exporter's would overwrite
it); series are keyed by labels that outlive a server upgrade (rule ids, ranks), frame names are only in
``*_info`` metrics; a batch job's ``pmuprof_last_success_timestamp_seconds`` survives failed runs, which
export no findings gauges (a failed run is not a clean one) and ``pmuprof_last_run_failed 1``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from collections.abc import Mapping

from .. import __version__
from ..findings.diagnosis import Diagnosis
from ..findings.hostload import BASIS as HOST_BASIS
from ..findings.model import Finding
from ..model.profile import Profile

TOP_FUNCTIONS = 10  # per instance: bounds the label cardinality a changing profile can create
MAX_LABEL = 200  # characters of a function name kept in a label value
SEVERITIES = ("critical", "warning", "info")

HELP = {
    "pmuprof_last_run_timestamp_seconds": "When the last pmuprof run ended (Unix time).",
    "pmuprof_last_run_exit_code": "Exit status of the last pmuprof run (0 ok, 10 warning, 20 critical, else an error).",
    "pmuprof_last_run_failed": "1 when the last run failed or lacked the server facts it was asked for, else 0.",
    "pmuprof_last_success_timestamp_seconds": "When the last run that succeeded ended (Unix time).",
    "pmuprof_last_run_duration_seconds": "Length of the last capture window.",
    "pmuprof_info": "pmuprof version and the event the last run sampled.",
    "pmuprof_samples": "Samples of each profiled server in the last run.",
    "pmuprof_findings": "Findings of the last run by severity (absent after a failed run).",
    "pmuprof_finding_share_ratio": "Share of the server's on-CPU samples a finding covers (findings graded on samples).",
    "pmuprof_finding_offcpu_share_ratio": "Share of the server's off-CPU time a finding covers (graded on off-CPU time).",
    "pmuprof_finding_host_share_ratio": "Share of the host's CPU time a host finding covers (other processes' time).",
    "pmuprof_finding_frame_info": "The hot frame each finding names (its name may change with the server build).",
    "pmuprof_top_function_self_share_ratio": "Share of the server's samples whose leaf is the function at this rank.",
    "pmuprof_top_function_info": "The function at each rank of pmuprof_top_function_self_share_ratio.",
    "pmuprof_ipc_ratio": "Instructions per cycle counted during the last run.",
}
# A finding's share is of its basis (Finding.basis): one metric name per denominator.
SHARE_METRICS = {
    "samples": "pmuprof_finding_share_ratio",
    "off-CPU time": "pmuprof_finding_offcpu_share_ratio",
    HOST_BASIS: "pmuprof_finding_host_share_ratio",
}


@dataclass(frozen=True)
class RunMetrics:
    """What one run says about a host: when it ended, how, and (when it got that far) its profile."""

    host: str
    source: str  # the textfile's stem: two files never export the same series
    ended: float
    exit_code: int
    profile: Profile | None = None
    diagnosis: Diagnosis = Diagnosis()
    succeeded: bool = True  # the caller knows which exit codes are a success (0, 10, 20)
    last_success: float | None = None  # the previous file's success stamp, kept across failed runs


def escape_label(value: str) -> str:
    """A label value as the exposition format wants it: backslash, double quote and newline escaped."""
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


def _line(name: str, labels: Mapping[str, str], value: float) -> str:
    text = ",".join(f'{k}="{escape_label(v)}"' for k, v in labels.items())
    return f"{name}{{{text}}} {_number(value)}"


def _instances(profile: Profile) -> list[str]:
    return profile.processes()


def _instance_of(finding: Finding, instances: list[str]) -> str:
    if finding.process:
        return finding.process
    return instances[0] if len(instances) == 1 else "all"


def _profile_lines(m: RunMetrics, base: dict[str, str]) -> dict[str, list[str]]:
    profile = m.profile
    assert profile is not None
    out: dict[str, list[str]] = {name: [] for name in HELP}
    instances = _instances(profile)
    for inst in instances:
        part = profile.restrict([inst])
        total = part.total
        out["pmuprof_samples"].append(_line("pmuprof_samples", {**base, "server": inst}, total))
        if not total:
            continue
        top = part.stacks.top_self(TOP_FUNCTIONS)
        for rank, (name, count) in enumerate(top, 1):  # series keyed by rank; the name only in the info metric
            labels = {**base, "server": inst, "rank": str(rank)}
            out["pmuprof_top_function_self_share_ratio"].append(
                _line("pmuprof_top_function_self_share_ratio", labels, count / total)
            )
            out["pmuprof_top_function_info"].append(
                _line("pmuprof_top_function_info", {**labels, "function": name[:MAX_LABEL]}, 1)
            )
    for f in m.diagnosis.findings if m.succeeded else ():
        labels = {**base, "server": _instance_of(f, instances), "rule": f.rule, "severity": f.severity}
        metric = SHARE_METRICS.get(f.basis)
        if metric is not None:
            out[metric].append(_line(metric, labels, round(f.share, 6)))
        if f.chain:
            frame = {**base, "server": labels["server"], "rule": f.rule, "frame": f.chain[0][:MAX_LABEL]}
            out["pmuprof_finding_frame_info"].append(_line("pmuprof_finding_frame_info", frame, 1))
    for proc, ipc in profile.counters.ipc_by_process().items():
        inst = proc or (instances[0] if len(instances) == 1 else "all")
        out["pmuprof_ipc_ratio"].append(_line("pmuprof_ipc_ratio", {**base, "server": inst}, ipc))
    event = profile.run.record.event_recorded or profile.unit
    out["pmuprof_info"].append(_line("pmuprof_info", {**base, "version": __version__, "event": event}, 1))
    if isinstance(profile.run.duration_s, (int, float)):
        out["pmuprof_last_run_duration_seconds"].append(
            _line("pmuprof_last_run_duration_seconds", base, float(profile.run.duration_s))
        )
    return out


def render_metrics(m: RunMetrics) -> str:
    """The .prom file: HELP and TYPE once per metric, series sorted, duplicate series impossible."""
    base = {"host": m.host, "source": m.source}
    lines: dict[str, list[str]] = {name: [] for name in HELP}
    if m.profile is not None:
        lines = _profile_lines(m, base)
    else:
        lines["pmuprof_info"].append(_line("pmuprof_info", {**base, "version": __version__, "event": ""}, 1))
    lines["pmuprof_last_run_timestamp_seconds"].append(
        _line("pmuprof_last_run_timestamp_seconds", base, round(m.ended, 3))
    )
    lines["pmuprof_last_run_exit_code"].append(_line("pmuprof_last_run_exit_code", base, m.exit_code))
    lines["pmuprof_last_run_failed"].append(_line("pmuprof_last_run_failed", base, 0 if m.succeeded else 1))
    success = round(m.ended, 3) if m.succeeded else m.last_success
    if success is not None:  # never succeeded yet: absent, so `time() - it` alerts on absent()
        lines["pmuprof_last_success_timestamp_seconds"].append(
            _line("pmuprof_last_success_timestamp_seconds", base, success)
        )
    if m.succeeded:
        counts = {sev: 0 for sev in SEVERITIES}
        for f in m.diagnosis.findings:
            counts[f.severity] = counts.get(f.severity, 0) + 1
        lines["pmuprof_findings"] = [_line("pmuprof_findings", {**base, "severity": s}, n) for s, n in counts.items()]
    text = []
    for name in HELP:
        series = _unique(lines[name])
        if series:
            text += [f"# HELP {name} {HELP[name]}", f"# TYPE {name} gauge", *series]
    return "\n".join(text) + "\n"


def _unique(series: list[str]) -> list[str]:
    """One sample per label set (the first, i.e. the largest share: findings come ordered), sorted."""
    first: dict[str, str] = {}
    for line in series:
        first.setdefault(line.rsplit(" ", 1)[0], line)
    return sorted(first.values())


def last_success(text: str, source: str) -> float | None:
    """The success stamp in a .prom file this source wrote earlier (None: none, or not ours)."""
    for line in text.splitlines():
        if line.startswith("pmuprof_last_success_timestamp_seconds{") and f'source="{escape_label(source)}"' in line:
            try:
                return float(line.rsplit(" ", 1)[1])
            except ValueError:
                return None
    return None

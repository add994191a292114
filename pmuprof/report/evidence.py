"""A finding's evidence as its rule declares it: each item's 'about' text and its value in words and units."""

from __future__ import annotations

from typing import Any, Mapping

from ..findings.model import Declared, Finding

STACK_KINDS = ("stack", "latch")
PATH_KINDS = ("host", "run", "target", "analysis", "quality", "mysql")
_META = ("samples", "server", "thresholds", "raised_by")  # added by the engine, shown otherwise
_KIND_ABOUT = {"variable": "server variable {}", "status": "server status {}", "counter": "counter {}",
               "counter_ratio": "{}", "processlist_state": "threads in processlist state '{}'",
               "mysql": "mysql.json {}", "host": "run.json host.{}", "run": "run.json {}", "target": "run.json target {}",
               "analysis": "analysis.json {}", "quality": "stack quality: {}", "derived": "{}"}
MAX_CHAINS = 3


def pct(share: float) -> str:
    """A share (0..1) as a percentage: '35.0 %', '<0.1 %' for tiny non-zero shares."""
    if 0 < abs(share) < 0.0005:
        return "<0.1 %"
    return f"{100.0 * share:.1f} %"


def number(value: Any) -> str:
    """A count with separators; a fraction with up to three significant decimals; booleans as words."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer() and abs(value) >= 1):
        return f"{int(value):,}"
    if isinstance(value, float):
        return f"{value:,.2f}" if abs(value) >= 10 else f"{value:.3g}"
    return str(value)


def is_share(item: Declared) -> bool:
    """Whether an item's value is a fraction of the samples (stack and latch shares, *_share paths)."""
    return item.kind in STACK_KINDS or item.what.endswith("share") or item.name.endswith("share")


def about(item: Declared) -> str:
    """The rule's own words for the item, else what the matcher reads."""
    if item.about:
        return item.about
    template = _KIND_ABOUT.get(item.kind)
    return template.format(item.what) if template and item.what else item.name.replace("_", " ")


def _scalar(item: Declared, value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return {True: "yes", False: "no", None: "not recorded"}[value]
    if isinstance(value, (list, tuple)):
        return ", ".join(_scalar(item, v) for v in value) or "none"
    if isinstance(value, (int, float)):
        return f"{pct(value)} of samples" if is_share(item) and 0 <= value <= 1 else number(value)
    return str(value) or "not recorded"


def _stack(value: Mapping[str, Any]) -> str:
    count = int(value.get("count") or 0)
    if not count:
        return "none (0 samples)"
    text = f"{pct(float(value.get('share') or 0.0))} of samples ({count:,} samples)"
    modes = value.get("modes_text")
    return text + (f"; modes: {modes}" if modes and modes != "not known" else "")


def _offcpu(value: Mapping[str, Any]) -> str:
    """Off-CPU time: seconds blocked, threads blocked on average, share of the off-CPU time."""
    us = int(value.get("us") or 0)
    if not us:
        return "none (0 µs off-CPU)"
    avg = value.get("avg_threads")
    text = f"{us / 1e6:,.3f} s blocked" + (f" = {avg:.2f} threads on average" if isinstance(avg, float) else "")
    text += f"; {pct(float(value.get('share') or 0.0))} of the off-CPU time"
    seen = value.get("threads")
    return text + (f"; {seen} thread(s) in it at the start or end" if seen else "")


def _derived(item: Declared, value: Mapping[str, Any]) -> str:
    if item.what == "numa_placement":
        remote = value.get("remote_memory_share")
        nodes = ", ".join(str(n) for n in value.get("cpu_nodes") or []) or "?"
        return (f"runs on node(s) {nodes} of {value.get('host_nodes') or '?'}; remote memory "
                + (pct(remote) if isinstance(remote, (int, float)) else "not known"))
    if item.what == "samples":
        return f"{number(value.get('value'))} samples"
    return str(value.get("summary") or _scalar(item, value.get("value")))


def value_text(item: Declared, value: Any) -> str:
    """One evidence value in words: percentages as %, counts with separators, booleans as yes/no."""
    if value is None:
        return "not recorded"
    if not isinstance(value, Mapping):
        return _scalar(item, value)
    if item.kind == "offcpu":
        return _offcpu(value)
    if item.kind in STACK_KINDS or {"count", "share"} <= set(value):
        return _stack(value)
    if item.kind == "counter_ratio":
        parts = [k for k in value if k != "value"]
        ratio = f"{float(value['value']):.2f}"
        return ratio + (f" ({parts[0]} {number(value[parts[0]])} / {parts[1]} {number(value[parts[1]])})"
                        if len(parts) == 2 else "")
    if item.kind == "processlist_state":
        return f"{number(value.get('value'))} threads"
    if item.kind == "derived" or "summary" in value:
        return _derived(item, value)
    return _scalar(item, value.get("value"))


def _chains(value: Any) -> list[str]:
    if not isinstance(value, Mapping) or not value.get("count"):
        return []
    return [str(c.get("text")) for c in (value.get("chains") or [])[:MAX_CHAINS] if isinstance(c, Mapping) and c.get("text")]


def evidence_rows(finding: Finding) -> list[dict[str, Any]]:
    """Each declared evidence item: what it measures (the rule's 'about') and its value, formatted."""
    declared = finding.declared or tuple(Declared(k, "", "") for k in sorted(finding.evidence) if k not in _META)
    return [{"name": d.name, "about": about(d), "text": value_text(d, finding.evidence.get(d.name)),
             "chains": _chains(finding.evidence.get(d.name))} for d in declared]


def levels_text(finding: Finding) -> str:
    """'Levels on dive: info from 10.0 %, warning from 25.0 %, critical from 50.0 %' (and what raised it)."""
    th = finding.evidence.get("thresholds")
    parts = []
    if isinstance(th, Mapping) and th.get("metric"):
        by_name = {d.name: d for d in finding.declared}
        metrics = list(th["metric"])
        share = all(is_share(by_name.get(m, Declared(m, "", ""))) for m in metrics)
        word = "up to" if th.get("below") else "from"
        levels = [f"{lvl} {word} {pct(th[lvl]) if share else number(th[lvl])}"
                  for lvl in ("info", "warning", "critical") if isinstance(th.get(lvl), (int, float))]
        parts.append(f"Levels on {' / '.join(metrics)}: " + ", ".join(levels))
    raised = finding.evidence.get("raised_by")
    if raised:
        parts.append("raised one level by: " + ", ".join(_raised(finding, str(r)) for r in raised))
    return "; ".join(parts)


def _raised(finding: Finding, path: str) -> str:
    """'cost.delay_raised' as the item's about text and the field in words."""
    name, _, rest = path.partition(".")
    item = next((d for d in finding.declared if d.name == name), None)
    head = about(item) if item else name.replace("_", " ")
    return f"{head} ({rest.replace('_', ' ')})" if rest else head

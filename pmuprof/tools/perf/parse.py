"""Pure parsers of perf's own outputs: stat CSV, evlist -v, record's summary line, header."""

from __future__ import annotations

import re

_RECORD_LINE = re.compile(r"Captured and wrote ([\d.]+) MB .*?\((\d+) samples\)")
_LOST = re.compile(r"(?:Lost|lost) (\d+) (?:chunks|samples|events)", re.I)


def parse_stat_csv(text: str) -> list[dict]:
    """`perf stat -x,` lines → [{event, value, unit, supported, running_pct, enabled_ns}]."""
    rows = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        f = line.split(",")
        if len(f) < 3:
            continue
        raw, unit, event = f[0].strip(), f[1].strip(), f[2].strip()
        if not event:
            continue
        supported = raw not in ("<not supported>", "<not counted>")
        value = _num(raw) if supported else None
        rows.append(
            {
                "event": event,
                "value": value,
                "unit": unit,
                "supported": supported and value is not None,
                "status": raw if not supported else "counted",
                "enabled_ns": _num(f[3]) if len(f) > 3 else None,
                "running_pct": _num(f[4]) if len(f) > 4 else None,
            }
        )
    return rows


def _num(text: str) -> float | None:
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return int(value) if value.is_integer() else value


def parse_evlist(text: str) -> list[dict]:
    """`perf evlist -v` → [{name, type, config}] (type 0 = hardware, 1 = software, 4 = raw)."""
    events = []
    for line in text.splitlines():
        if ":" not in line or line.startswith("#"):
            continue
        name, _, attrs = line.partition(": ")
        fields = dict(_attr_pairs(attrs))
        rate = _SAMPLE_FREQ.search(attrs)
        events.append(
            {
                "name": name.strip(),
                "type": _int(fields.get("type")),
                "config": fields.get("config", "0"),
                "sample_type": fields.get("sample_type", ""),
                # the sampling rate in the attr (perf prints sample_period and sample_freq as one field):
                # a frequency only with "freq: 1" (-F), else a period (-c)
                "sample_freq": _int(rate.group(1)) if rate and fields.get("freq") == "1" else None,
            }
        )
    return events


_SAMPLE_FREQ = re.compile(r"\{ sample_period, sample_freq \}: (\d+)")


def _attr_pairs(attrs: str):
    for part in attrs.split(", "):
        key, sep, value = part.partition(": ")
        if sep:
            yield key.strip(), value.strip()


def _int(text: str | None) -> int | None:
    return int(text) if text and text.lstrip("-").isdigit() else None


def parse_record_stderr(text: str) -> dict:
    out: dict = {}
    m = _RECORD_LINE.search(text)
    if m:
        out["data_mb"] = float(m.group(1))
        out["samples_total"] = int(m.group(2))
    lost = [int(x) for x in _LOST.findall(text)]
    out["lost"] = sum(lost)
    return out


def parse_buildid_list(text: str) -> dict[str, str]:
    """`perf buildid-list` lines ('<hex build-id> <path>') → {path: build-id}."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        bid, _, path = line.strip().partition(" ")
        if path and len(bid) >= 16 and all(c in "0123456789abcdef" for c in bid.lower()):
            out[path.strip()] = bid.lower()
    return out

"""Parse the SEMAPHORES section of SHOW ENGINE INNODB STATUS (MySQL 5.5–9.x, MariaDB, Percona)."""

from __future__ import annotations

import re
from typing import Any

# A section header is a line of dashes, an upper-case title, a line of dashes.
_HEADER = re.compile(r"^-{3,}\n([A-Z][A-Z0-9 /&'()_-]*)\n-{3,}$", re.M)
_LATCH_KEYS = {"mutex": "mutex", "rw-shared": "rw_shared", "rw-excl": "rw_excl", "rw-sx": "rw_sx"}
# 5.6: "Mutex spin waits 5672, rounds 59325, OS waits 1787"; 5.5–8.0: "RW-shared spins 3, rounds 9, OS waits 1"
_COUNTS = re.compile(
    r"^(Mutex|RW-shared|RW-excl|RW-sx) spin(?:s| waits) (\d+), rounds (\d+), OS waits (\d+)", re.M | re.I
)
# 5.1/5.5 builtin: "RW-shared spins 0, OS waits 0; RW-excl spins 0, OS waits 0"
_OLD_COUNTS = re.compile(r"(RW-shared|RW-excl) spins (\d+), OS waits (\d+)", re.I)
_PER_WAIT = re.compile(r"^Spin rounds per wait:(.*)$", re.M)
_PER_WAIT_ITEM = re.compile(r"(-?[\d.]+|nan|inf) (mutex|RW-shared|RW-excl|RW-sx)", re.I)
_ARRAY_LINE = re.compile(r"^OS WAIT ARRAY INFO:(.*)$", re.M)
_ARRAY = re.compile(r"(reservation|signal) count (\d+)")
_WAIT = re.compile(r"^--Thread (\d+) has waited at (\S+) line (\d+) for ([\d.]+) seconds the semaphore:\n(.*)$", re.M)


def split_sections(status: str) -> dict[str, str]:
    """Map each section title of an InnoDB monitor output to its body text (stripped)."""
    text = status.replace("\r\n", "\n")
    heads = list(_HEADER.finditer(text))
    out: dict[str, str] = {}
    for i, head in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        out[head.group(1).strip()] = text[head.end() : end].strip("\n")
    return out


def _rate(value: str) -> float | None:
    try:
        number = float(value)
    except ValueError:
        return None
    return number if number == number and number not in (float("inf"), float("-inf")) else None


def _latches(body: str) -> dict[str, dict[str, int]]:
    latches: dict[str, dict[str, int]] = {}
    for m in _COUNTS.finditer(body):
        key = _LATCH_KEYS[m.group(1).lower()]
        latches[key] = {"spin_waits": int(m.group(2)), "rounds": int(m.group(3)), "os_waits": int(m.group(4))}
    for m in _OLD_COUNTS.finditer(body):
        key = _LATCH_KEYS[m.group(1).lower()]
        if key not in latches:
            latches[key] = {"spin_waits": int(m.group(2)), "os_waits": int(m.group(3))}
    return latches


def _per_wait(body: str, latches: dict[str, dict[str, int]]) -> dict[str, float]:
    """The server's own "Spin rounds per wait" line, else rounds / spin waits per latch type."""
    out: dict[str, float] = {}
    line = _PER_WAIT.search(body)
    if line:
        for m in _PER_WAIT_ITEM.finditer(line.group(1)):
            value = _rate(m.group(1))
            if value is not None:
                out[_LATCH_KEYS[m.group(2).lower()]] = value
    for key, counts in latches.items():
        if key not in out and "rounds" in counts:
            waits = counts["spin_waits"]
            out[key] = round(counts["rounds"] / waits, 2) if waits else 0.0
    return out


def _waits(body: str) -> list[dict[str, Any]]:
    """Threads blocked on a latch for long ("--Thread N has waited at FILE line L for S seconds")."""
    return [
        {
            "thread": int(m.group(1)),
            "at": f"{m.group(2)}:{m.group(3)}",
            "seconds": float(m.group(4)),
            "semaphore": m.group(5).strip(),
        }
        for m in _WAIT.finditer(body)
    ]


def parse_semaphores(status: str) -> dict[str, Any]:
    """Parse the SEMAPHORES section out of a full ``SHOW ENGINE INNODB STATUS`` text.

    ``found`` is False when the output has no such section; ``empty`` is True when the
    section has no lines (MariaDB 10.6+ removed the sync array, so it is empty even under load).
    """
    sections = split_sections(status)
    found = "SEMAPHORES" in sections
    body = sections.get("SEMAPHORES", "")
    array = {
        f"{m.group(1)}_count": int(m.group(2))
        for line in _ARRAY_LINE.finditer(body)
        for m in _ARRAY.finditer(line.group(1))
    }
    latches = _latches(body)
    return {
        "found": found,
        "raw": body,
        "empty": not body.strip(),
        "os_wait_array": array,
        "latches": latches,
        "spin_rounds_per_wait": _per_wait(body, latches),
        "waits": _waits(body),
    }

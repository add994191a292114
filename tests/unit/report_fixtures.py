"""Shared synthetic profiles for the report, diff and export tests (hostile names included)."""

from __future__ import annotations

from pmuprof.findings.evidence import Fact
from pmuprof.findings.model import Finding
from pmuprof.findings.steps import FixStep
from pmuprof.model.folded import parse_folded
from helpers import make_profile

HOSTILE_SCRIPT = "</script><img src=x onerror=alert(1)>"
HOSTILE_TEMPLATE = "std::vector<int, A<B>>&::operator[]"
HOSTILE_BYTES = b"mariadbd;bad\xff\xfename 7\n"

RUN = {
    "pmuprof_version": "0.1.0",
    "command": ["pmuprof", "capture", "-p", "123"],
    "started": "2026-11-21T12:00:00Z",
    "duration_s": 5.0,
    "mode": "per-cpu",
    "targets": [
        {
            "pid": 123,
            "label": "mariadbd",
            "comm": "mariadbd",
            "exe": "/usr/sbin/mariadbd",
            "threads": 41,
            "cpus_allowed": "0-7",
            "numa": {"cpu_nodes": [0], "memory_pages": {"0": 750, "1": 250}},
        },
        {
            "pid": 456,
            "label": "mariadbd-2",
            "comm": "mariadbd",
            "cpus_allowed": "8-15",
            "numa": {"cpu_nodes": [1], "memory_pages": {"1": 100}},
        },
    ],
    "host": {"cpu_model": "Test CPU", "microarch": "zen4", "nproc": 16, "kernel": "6.1.0", "hardware_pmu": False},
    "record": {
        "argv": ["perf", "record", "-a", "-g"],
        "event_requested": "cycles",
        "event_recorded": "cpu-clock",
        "frequency": 99,
        "call_graph": "fp",
        "samples_total": 2000,
        "lost": 0,
    },
    "warnings": [],
    "features_off": [{"feature": "hardware counters", "why": "no PMU", "fix": "bare metal"}],
}
COUNTERS = {
    "events": [
        {"process": "mariadbd", "event": "cycles", "value": 1000, "enabled_ns": 100, "running_pct": 50.0},
        {"process": "mariadbd", "event": "instructions", "value": 500, "enabled_ns": 100, "running_pct": 50.0},
        {"process": "mariadbd-2", "event": "cycles", "value": 100, "enabled_ns": 100, "running_pct": 100.0},
        {"process": "mariadbd-2", "event": "instructions", "value": 150, "enabled_ns": 100, "running_pct": 100.0},
        {"process": "mariadbd-2", "event": "LLC-load-misses", "supported": False, "status": "<not supported>"},
    ]
}
MYSQL = {
    "reachable": True,
    "server": {"version": "10.11.6-MariaDB", "family": "mariadb"},
    "variables": {"innodb_spin_wait_delay": "30", "innodb_sync_spin_loops": "30"},
    "processlist": {"threads": 20, "states": {"statistics": 12, "Sending data": 3}},
    "semaphores": {
        "empty": False,
        "os_wait_array": {"reservation_count": 5},
        "latches": {"mutex": {"spin_waits": 10, "rounds": 300, "os_waits": 2}},
    },
    "missing": ["performance_schema is OFF"],
}


def stacks(spin: int = 500) -> dict[tuple[str, ...], int]:
    return {
        (
            "mariadbd",
            "start_thread",
            "do_command",
            "btr_estimate_n_rows_in_range",
            "fil_space_get",
            "mutex_enter",
            "ut_delay",
        ): spin,
        ("mariadbd", "start_thread", "do_command", "row_search_mvcc"): 300,
        ("mariadbd", "start_thread", "do_command", "row_search_mvcc", HOSTILE_TEMPLATE): 40,
        ("mariadbd", "[unknown]", HOSTILE_SCRIPT): 10,
        ("mariadbd", "start_thread", "tcp_recvmsg_[k]"): 50,
        ("mariadbd-2", "start_thread", "do_command", "ut_delay"): 100,
    }


def profile(spin: int = 500, source: str = "/runs/a"):
    extra, _ = parse_folded(HOSTILE_BYTES.decode("utf-8", "backslashreplace").splitlines())
    return make_profile({**stacks(spin), **extra}, RUN, COUNTERS, MYSQL, ANALYSIS, source=source)


def findings() -> list[Finding]:
    return [
        Finding("info-rule", "info", "An info finding", 0.05, message="informational"),
        Finding(
            "innodb-spin-wait",
            "critical",
            f"Spinning in ut_delay {HOSTILE_SCRIPT}",
            0.5,
            message=f"ut_delay under {HOSTILE_TEMPLATE}",
            evidence={"ut_delay_share": Fact(0.5, 0.5), "frames": Fact([HOSTILE_SCRIPT], None)},
            fix=(
                FixStep("note", "The delay was raised above its default: restore it.", "MariaDB 10.2+"),
                FixStep("sql", "SET GLOBAL innodb_spin_wait_delay = 6;", "MariaDB 10.2+"),
                FixStep("my.cnf", "[mysqld]\ninnodb_spin_wait_delay = 6", "MariaDB 10.2+"),
            ),
            next_steps=("re-run and diff",),
            references=("https://mariadb.com/kb/en/innodb-system-variables/", "javascript:alert(1)"),
            chain=("ut_delay", "mutex_enter", "fil_space_get"),
            process="mariadbd",
        ),
    ]


ANALYSIS = {
    "skid_functions": [
        {
            "symbol": "ut_delay",
            "binary": "/usr/sbin/mariadbd",
            "samples": 100,
            "moved": 89,
            "corrected_by_kind": {"pause": 90},
            "instructions": [
                {"address": "0x10", "offset": 0, "text": "pause", "kind": "pause", "raw": 1, "corrected": 90},
                {"address": "0x12", "offset": 2, "text": "add eax, 1", "kind": "", "raw": 89, "corrected": 0},
                {
                    "address": "0x15",
                    "offset": 5,
                    "text": f"cmp {HOSTILE_SCRIPT}",
                    "raw": 10,
                    "corrected": 10,
                    "ambiguous": True,
                },
            ],
        }
    ]
}

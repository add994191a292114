"""Cut a rule fixture from a real off-CPU capture (a run directory of benchmarks/offcpu_scenarios.py).

    python3 benchmarks/offcpu_fixture.py CAPTURE_DIR tests/rules/fixtures/RULE/fire-NAME [--note TEXT]

Writes NAME.folded (the on-CPU stacks), NAME.offcpu (the off-CPU stacks) and NAME.json (the server's
version and the variables rules read, the off-CPU outcome of run.json, threads.json). Stacks are
copied verbatim; only the smallest ones are left out (each file says how much it kept), so the
fixture stays small and every number in it is the capture's.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

KEEP_SHARE = 0.0005  # stacks under 0.05 % of the time (or samples) are left out
MAX_STACKS = 120
VARIABLES = (
    "innodb_flush_log_at_trx_commit",
    "sync_binlog",
    "log_bin",
    "innodb_thread_concurrency",
    "innodb_lock_wait_timeout",
    "lock_wait_timeout",
    "innodb_buffer_pool_size",
    "table_open_cache",
    "binlog_commit_wait_count",
    "binlog_commit_wait_usec",
    "innodb_sync_array_size",
    "innodb_flush_method",
    "innodb_use_native_aio",
    "thread_handling",
    "innodb_spin_wait_delay",
    "innodb_sync_spin_loops",
    "innodb_buffer_pool_chunk_size",
    "innodb_io_capacity",
    "innodb_page_size",
)
STATUS = ("Innodb_buffer_pool_", "Innodb_page_size", "Innodb_data_reads")  # what the buffer-pool rules read


def _cut(path: Path, unit: str) -> tuple[list[str], list[str], int, int]:
    """(header lines, kept stack lines, kept total, whole total) of a folded file."""
    headers, rows = [], []
    for line in path.read_text(encoding="utf-8", errors="backslashreplace").splitlines():
        if line.startswith("#"):
            headers.append(line)
        elif line.strip():
            stack, _, count = line.rpartition(" ")
            rows.append((int(count), stack))
    whole = sum(n for n, _ in rows)
    rows.sort(key=lambda r: (-r[0], r[1]))
    kept = [r for r in rows if r[0] >= KEEP_SHARE * whole][:MAX_STACKS]
    total = sum(n for n, _ in kept)
    note = f"# cut: {len(kept)} of {len(rows)} stacks, {total} of {whole} {unit} (benchmarks/offcpu_fixture.py)"
    return headers + [note], [f"{s} {n}" for n, s in kept], total, whole


def _facts(capture: Path) -> dict:
    mysql = json.loads((capture / "mysql.json").read_text())
    run = json.loads((capture / "run.json").read_text())
    threads = json.loads((capture / "threads.json").read_text()) if (capture / "threads.json").is_file() else {}
    variables = {k: v for k, v in (mysql.get("variables") or {}).items() if k in VARIABLES}
    offcpu = {k: v for k, v in (run.get("offcpu") or {}).items() if k not in ("argv", "stderr")}
    status = mysql.get("status") or {}
    status = {
        part: (
            {k: v for k, v in status[part].items() if k.startswith(STATUS)}
            if isinstance(status[part], dict)
            else status[part]
        )
        for part in status
    }
    record = {k: v for k, v in (run.get("record") or {}).items() if k in ("frequency", "event_recorded")}
    server = {
        "reachable": mysql.get("reachable", True),
        "server": mysql.get("server", {}),
        "variables": variables,
        "status": status,
        "innodb_data": mysql.get("innodb_data"),
    }
    return {
        "run": {"offcpu": offcpu, "duration_s": run.get("duration_s"), "record": record},
        "mysql": server,
        "threads": threads,
    }


def write(capture: Path, stem: Path, headline: list[str]) -> None:
    stem.parent.mkdir(parents=True, exist_ok=True)
    on_head, on_rows, _, _ = _cut(capture / "stacks.folded", "samples")
    off_head, off_rows, _, _ = _cut(capture / "offcpu.folded", "us")
    source = f"# capture: {capture.name} (benchmarks/offcpu_scenarios.py)"
    stem.with_suffix(".folded").write_text("\n".join(headline + [source] + on_head + on_rows) + "\n")
    stem.with_suffix(".offcpu").write_text("\n".join(off_head + off_rows) + "\n")
    stem.with_suffix(".json").write_text(json.dumps(_facts(capture), indent=1, sort_keys=True) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("capture", type=Path)
    ap.add_argument("stem", type=Path, help="fixture path without suffix: tests/rules/fixtures/RULE/fire-NAME")
    ap.add_argument("--header", action="append", default=[], help="a fixture header line, e.g. 'severity: critical'")
    args = ap.parse_args()
    write(args.capture, args.stem, [f"# {h}" for h in args.header])
    return 0


if __name__ == "__main__":
    sys.exit(main())

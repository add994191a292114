"""Summarise a PMUPROF_TEST_TIMELINE file (tests/shared.py timeline): busy CPU-seconds per test module, lock held.

    PMUPROF_TEST_TIMELINE=/tmp/tl.tsv python3 tests/run_tiers.py
    python3 tests/timeline.py /tmp/tl.tsv [--top 40]

The host's busy CPU time between two consecutive events is shared equally by the tests running then: servers,
loads and pmuprof's children are counted where their test was running, and a test beside a busy neighbour gets
half of both. An estimate for choosing what to cut, not a measurement of one test.
"""

from __future__ import annotations

import argparse
import collections


def read(path: str) -> list[tuple[float, str, str, str, float]]:
    """The timeline's rows; an xdist controller's copy of a worker's row is left out."""
    rows = []
    for line in open(path, encoding="utf-8"):
        parts = line.rstrip("\n").split("\t")
        if len(parts) == 5:
            rows.append((float(parts[0]), parts[1], parts[2], parts[3], float(parts[4])))
    in_workers = {test for _, worker, _, test, _ in rows if worker != "main"}
    return sorted((r for r in rows if r[1] != "main" or r[3] not in in_workers), key=lambda r: r[0])  # stable


def summarise(rows) -> tuple[collections.Counter, collections.Counter, float, float]:
    """(worker-seconds, CPU-seconds) per module, the CPU-seconds with no test running, the wall from first to last."""
    wall: collections.Counter = collections.Counter()
    cpu: collections.Counter = collections.Counter()
    running: dict[tuple[str, str], float] = {}
    idle_cpu, last_cpu = 0.0, rows[0][4]
    for t, worker, event, test, busy in rows:
        share = busy - last_cpu
        if running:
            for _, name in running:
                cpu[name.split("::")[0]] += share / len(running)
        else:
            idle_cpu += share
        last_cpu = busy
        key = (worker, test)
        if event == "start":
            running[key] = t
        elif event == "end" and key in running:
            wall[test.split("::")[0]] += t - running.pop(key)
    return wall, cpu, idle_cpu, rows[-1][0] - rows[0][0]


def held(rows) -> tuple[float, collections.Counter, collections.Counter]:
    """Seconds the flat-out lock (tests/shared.py: hold_cpus) was held in all, per module holding it, and per
    module waiting for it (from its ``want`` row to its ``hold``)."""
    per: collections.Counter = collections.Counter()
    waited: collections.Counter = collections.Counter()
    since: dict[str, tuple[float, str]] = {}
    wanted: dict[str, float] = {}
    for t, worker, event, test, _busy in rows:
        if event == "want":
            wanted[worker] = t
        elif event == "hold" and worker in wanted:
            waited[test.split("::")[0]] += t - wanted.pop(worker)
        if event == "hold":
            since[worker] = (t, test)
        elif event == "release" and worker in since:
            begun, holder = since.pop(worker)
            per[holder.split("::")[0]] += t - begun
    return sum(per.values()), per, waited


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()
    rows = read(args.file)
    if not rows:
        raise SystemExit(f"{args.file}: no timeline rows with CPU time (PMUPROF_TEST_TIMELINE, tests/shared.py)")
    wall, cpu, idle_cpu, span = summarise(rows)
    print(f"{'CPU-s':>8} {'worker-s':>9}  module")
    for name, seconds in cpu.most_common(args.top):
        print(f"{seconds:8.1f} {wall[name]:9.1f}  {name}")
    print(f"{sum(cpu.values()):8.1f} {sum(wall.values()):9.1f}  all tests ({span:.0f} s from first to last)")
    print(f"{idle_cpu:8.1f} {'':9}  busy with no test running (tier start-up, builds between tests)")
    total, per, waited = held(rows)
    if total:
        print(f"\nflat-out lock held {total:.0f} s of {span:.0f} s ({total / span:.0%}); by module:")
        for name, seconds in per.most_common(args.top):
            print(f"{seconds:8.1f}  {name}")
    if waited:
        print(f"\nwaited for the lock {sum(waited.values()):.0f} s; by module:")
        for name, seconds in waited.most_common(args.top):
            print(f"{seconds:8.1f}  {name}")


if __name__ == "__main__":
    main()

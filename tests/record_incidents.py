#!/usr/bin/env python3
"""Record a pmuprof capture during each incident load on Debian's MariaDB 10.11 and keep the run directory,
trimmed to what ``pmuprof report`` reads, with the server counters' truth: fixtures for fast rule tests.

    sudo python3 tests/record_incidents.py                       # every kind into tests/data/incidents/mariadb1011/
    sudo python3 tests/record_incidents.py hot_rows spill        # some kinds (the others are left as they are)
    sudo python3 tests/record_incidents.py --out DIR -d 8        # elsewhere, 8-second captures
    python3 tests/record_incidents.py --rejudge                  # truth.json again from its samples (no server)

Per kind: a private server (tests/incident_loads.py) runs the load until its incident state is reached; the
counters are sampled for --truth-seconds, ``pmuprof capture -p PID -d N`` records, and the counters are
sampled again (not during the capture: the sampler's own SHOW GLOBAL STATUS would be in the stacks).
KIND/truth.json holds both windows and their verdicts;
perf.data, the kept binaries, kallsyms, the tracer's raw output, perf's logs and the report outputs are
dropped (``pmuprof report KIND`` gives the same findings.json from stacks.folded and the rest, checked on a
spill capture). Needs root, perf, mariadb-server and sysbench; --rejudge needs none of them (after a change
of tests/incident_rules.py's thresholds, the recorded samples are judged again).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # this tree's pmuprof, as the tests use it

import incident_loads as il  # noqa: E402
from incident_verdicts import capture  # noqa: E402
import incidents  # noqa: E402
import mariadb as mdb  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "tests" / "data" / "incidents" / "mariadb1011"
# Left out of a kept run directory: what report does not read once stacks.folded exists (perf.data, the
# binaries and kallsyms it would need to read perf.data again, the tracer's raw output, perf's own logs) and
# the report outputs. Everything else is kept, so a file a newer capture writes is kept too.
DROPPED = (
    "perf.data",
    "perf.data.old",
    "binaries.tar.gz",
    "kallsyms.gz",
    "offcpu.out",
    "offcpu.log",
    "perf-record.log",
    "perf-stat.log",
    "perf-stat.csv",
    "report.html",
    "findings.json",
    "report.md",
    "flame.svg",
)


WINDOWS = ("before_capture", "after_capture")
NOTE = (
    "the counters are sampled right before and right after the capture, not during it: the sampler's own "
    "SHOW GLOBAL STATUS twice a second would be in the stacks (fill_status, 4.6 % of a healthy capture's samples)"
)


def _truth_json(kind: str, seconds: int, before: incidents.Truth, after: incidents.Truth) -> dict:
    return {
        "kind": kind,
        "expected": list(il.EXPECTED[kind]),
        "capture": f"pmuprof capture -p PID -d {seconds}",
        "note": NOTE,
        "before_capture": before.to_json(),
        "after_capture": after.to_json(),
    }


def _write(path: Path, truth: dict) -> None:
    path.write_text(json.dumps(truth, indent=1, sort_keys=True, default=str) + "\n")


def rejudge(folder: Path) -> None:
    """Every KIND/truth.json in ``folder`` judged again from its own samples."""
    for path in sorted(folder.glob("*/truth.json")):
        old = json.loads(path.read_text())
        again = []
        for name in WINDOWS:
            told = old[name]
            samples = incidents.samples_from_json(told["window"])
            again.append(incidents.judge(samples, told["variables"], told["derived"]["oldest_trx"]))
        seconds = int(old["capture"].split()[-1])
        _write(path, _truth_json(old["kind"], seconds, *again))
        print(f"{path.parent.name}: confirmed {again[0].confirmed()} before, {again[1].confirmed()} after")


def record(server: mdb.MariaDB, kind: str, dest: Path, seconds: int, truth_seconds: float) -> dict:
    """One kind: its truth before and after the capture, and the trimmed run directory in ``dest``."""
    scratch = Path(tempfile.mkdtemp(prefix=f"pmuprof-incident-{kind}-"))
    try:
        with il.incident(server, kind):
            with incidents.Sampler(server) as before:
                before.wait(truth_seconds)
            capture(server, scratch / "run", seconds)
            with incidents.Sampler(server) as after:
                after.wait(truth_seconds)
        truth = _truth_json(kind, seconds, before.truth(), after.truth())
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        for path in sorted((scratch / "run").iterdir()):
            if path.is_file() and not path.is_symlink() and path.name not in DROPPED and not path.name.startswith("."):
                shutil.copy2(path, dest / path.name)
        _write(dest / "truth.json", truth)
        return truth
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kinds", nargs="*", help=f"kinds to record (default: all): {', '.join(il.KINDS)}")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder of the KIND directories")
    ap.add_argument("-d", "--duration", type=int, default=8, help="capture seconds (default 8)")
    ap.add_argument("--truth-seconds", type=float, default=3.0, help="counter window before the capture")
    ap.add_argument("--rejudge", action="store_true", help="judge the recorded samples again; record nothing")
    args = ap.parse_args()
    if args.rejudge:
        rejudge(args.out)
        return
    unknown = sorted(set(args.kinds) - set(il.KINDS))
    if unknown:
        ap.error(f"unknown kind {', '.join(unknown)}; choose from {', '.join(il.KINDS)}")
    why = il.missing(il.DEBIAN)
    if why or os.geteuid() != 0 or shutil.which("perf") is None:
        sys.exit(f"record_incidents: needs root, perf and {why or 'a MariaDB server'}")
    work = Path(tempfile.mkdtemp(prefix="pmuprof-incidents-"))
    server = il.start_server(il.DEBIAN, work)
    try:
        il.prepare(server)
        for kind in args.kinds or il.KINDS:
            started = time.monotonic()
            truth = record(server, kind, args.out / kind, args.duration, args.truth_seconds)
            said = {k: v["state"] for k, v in truth["before_capture"]["verdicts"].items() if v["state"] == "confirmed"}
            size = sum(p.stat().st_size for p in (args.out / kind).iterdir())
            print(
                f"{kind}: {time.monotonic() - started:.0f} s, {size / 1e6:.2f} MB, confirmed {sorted(said)}", flush=True
            )
    finally:
        mdb.stop_mariadb(server)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

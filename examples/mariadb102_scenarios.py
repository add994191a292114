"""The seeds' loads on MariaDB 10.2.11, each captured live: what plain `perf report` shows beside what pmuprof says.

    python3 examples/mariadb102_scenarios.py [OUT.md]      (root, after `sh bootstrap.sh test`; ~4 min)

The same five scenarios as tests/integration/test_mariadb102_diagnosis.py (which asserts on them):
index dives over IN lists and over wide ranges at innodb_spin_wait_delay 200, oltp_write_only at
200 and at the default 6, and a healthy oltp_point_select. Each runs sysbench on the test suite's
private 10.2.11 server, `pmuprof capture -d 8 -F 199` records it, and `perf report` is run on the
same perf.data (self time by symbol, the server's pid). OUT.md (default
examples/mariadb102-scenarios.md) gets one section per scenario.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "examples"))

import mariadb as mdb  # noqa: E402
import mariadb102 as m102  # noqa: E402
from mariadb102_index_dive import perf_report  # noqa: E402

CAPTURE_S = 8
DIVE = str(mdb.INDEX_DIVE_LUA)
SCENARIOS = (  # name, innodb_spin_wait_delay, sysbench test, threads, script args
    ("index dives, IN lists, spin delay 200", 200, DIVE, 16, ("--range-width=0", "--ranges=100")),
    ("index dives, wide ranges, spin delay 200", 200, DIVE, 16, ()),
    ("oltp_write_only, spin delay 200", 200, "oltp_write_only", 16, None),
    ("oltp_write_only, spin delay 6 (default)", 6, "oltp_write_only", 16, None),
    ("oltp_point_select (healthy)", 6, "oltp_point_select", 8, None),
)


def _names(value: str | list[str]) -> str:
    return value if isinstance(value, str) else ", ".join(value)


def one(
    server: mdb.MariaDB, work: Path, name: str, delay: int, test: str, threads: int, args: tuple[str, ...] | None
) -> list[str]:
    mdb.sql(server, f"SET GLOBAL innodb_spin_wait_delay = {delay}")
    load = mdb.SysbenchLoad(server, CAPTURE_S + 30, test, threads, script_args=args)
    run = work / f"run-{abs(hash(name))}"
    try:
        cap = subprocess.run(
            [
                sys.executable,
                "-m",
                "pmuprof",
                "capture",
                "-p",
                str(server.pid),
                "-d",
                str(CAPTURE_S),
                "-F",
                "199",
                "-o",
                str(run),
                "--defaults-file",
                str(server.defaults_file),
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=600,
        )
    finally:
        load.stop()
    if cap.returncode:
        return [f"## {name}", "", f"capture failed: {cap.stderr.strip()[-300:]}", ""]
    perf = perf_report(run / "perf.data", server.pid).splitlines()
    data = json.loads((run / "findings.json").read_text())
    found = [
        f"- `{f['rule']}` {f['severity']} {100 * f['share']:.1f} %"
        + (f" (explained by `{_names(f['explained_by'])}`)" if f.get("explained_by") else "")
        for f in data["findings"]
    ]
    latches = [f"- {row['name']}: {100 * row['share']:.1f} %" for row in data["latches"][:4]]
    verdict = next((ln for ln in (run / "report.md").read_text().splitlines() if ln.startswith("**Verdict")), "")
    return [
        f"## {name}",
        "",
        "Plain `perf report` (self, top 8):",
        "",
        "```",
        *perf[:10],
        "```",
        "",
        "pmuprof:",
        "",
        verdict,
        "",
        *(found or ["- no finding"]),
        "",
        "Spin and waits by latch:",
        "",
        *(latches or ["- none"]),
        "",
    ]


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "examples" / "mariadb102-scenarios.md"
    server = m102.start_mariadb102()
    lines = []
    try:
        mdb.sysbench_prepare(server, tables=2, table_size=10000)
        mdb.index_dive_prepare(server, table_size=50000)
        version = mdb.sql(server, "SELECT VERSION()")[0][0]
        lines = [
            f"# MariaDB {version}: plain perf report beside pmuprof, per scenario",
            "",
            f"Made by `python3 examples/mariadb102_scenarios.py` (capture {CAPTURE_S} s at 199 Hz per "
            "scenario, one run each, on a shared 2-vCPU VM without a hardware PMU).",
            "",
        ]
        with tempfile.TemporaryDirectory(prefix="pmuprof-scen-") as tmp:
            for scenario in SCENARIOS:
                lines += one(server, Path(tmp), *scenario)
                print(lines[-1] if lines else "", flush=True)
    finally:
        mdb.stop_mariadb(server)
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

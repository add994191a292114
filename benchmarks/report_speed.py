"""Report speed and memory, side by side, round-robin: pmuprof report against perf script alone and inferno.

Usage (from the repository root, as root, after `make -C native`):

    python3 benchmarks/report_speed.py --data REF/perf.data --comm fgen --comm python3 --rounds 5
    python3 benchmarks/report_speed.py --data MDB/perf.data --comm mariadbd --rounds 5
    python3 benchmarks/report_speed.py --folded 1m.folded --rounds 3
    python3 benchmarks/report_speed.py --data M114/perf.data --comm mariadbd --rounds 5 --inline-cost

Inputs: the reference (../shared/bench/record.sh 240 REF), a real MariaDB capture
(benchmarks/record_mariadb.py MDB) and an N-distinct-stack folded file (benchmarks/gen_folded.py).
--reader PATH (perf.data) adds, in the same rounds, the report with another pmuprof-perfdata
(PMUPROF_PERFDATA=PATH, e.g. an older build's) and both readers alone, run as the report runs them:
a before/after of a change to the reader, on one machine state; with --reader-only, just the two readers
(PATH's first: the ratio column is this build's over PATH's, round by round).
--inline-cost runs the pipelines that price DWARF inline frames instead: the floor, the same with the
fields pmuprof-perfdata reproduces (`-F ...,sym,symoff,dso --no-inline`), the report (inline frames on,
the default) and the report with them off (PMUPROF_NO_INLINE=1).
Every process runs under `/usr/bin/time -f "%e %U %S %M"`: a pipeline's wall time is measured
around all its steps, its CPU is the sum over its processes, its peak RSS is the largest process.
Each round runs every pipeline once, in turn, so a drift in the machine's speed hits them alike;
ratios are taken round by round against the first pipeline (the floor), then the median is shown.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORK = Path(os.environ.get("PMUPROF_BENCH_DIR", "/tmp/pmuprof-bench"))
TIME = "/usr/bin/time"
FLOOR_FIELDS = "comm,pid,tid,time,ip,sym"  # the floor, as ../shared/bench/README.md defines it
READER_FIELDS = "comm,pid,tid,time,ip,sym,symoff,dso"  # what pmuprof-perfdata writes (perfdata.py)


def timed(cmd: str, tag: str, tmp: Path) -> str:
    return f"{TIME} -f '%e %U %S %M' -o {tmp / (tag + '.time')} {cmd}"


def reader_pipelines(data: Path, comms: list[str], out: Path, tmp: Path, other: Path) -> dict[str, list[str]]:
    """The report with another pmuprof-perfdata, and both readers alone with the report's arguments."""
    d, py = shlex.quote(str(data)), shlex.quote(sys.executable)
    sel = " ".join(f"--comm {shlex.quote(c)}" for c in comms)
    reader = "--time --inline --process-names " + sel
    steps = {
        f"pmuprof report perf.data (reader {other})": [
            f"PMUPROF_PERFDATA={shlex.quote(str(other))} "
            + timed(f"{py} -m pmuprof report {d} {sel} -o {out / 'ro'} --force", "repo", tmp)
        ]
    }
    for tag, binary in (("other", other), ("this", REPO / "native" / "build" / "pmuprof-perfdata")):
        cmd = f"{shlex.quote(str(binary))} {reader} --meta {out / (tag + '.json')} --stacks-bin {out / (tag + '.bin')} {d}"
        steps[f"pmuprof-perfdata alone ({binary})"] = [f"{timed(cmd, 'pd' + tag, tmp)} > /dev/null"]
    return steps


def perf_data_pipelines(data: Path, comms: list[str], out: Path, tmp: Path) -> dict[str, list[str]]:
    d = shlex.quote(str(data))
    py = shlex.quote(sys.executable)
    sel = " ".join(f"--comm {shlex.quote(c)}" for c in comms)
    steps = {
        f"perf script -F {FLOOR_FIELDS} > /dev/null": [
            f"{timed(f'perf script -i {d} -F {FLOOR_FIELDS}', 'ps', tmp)} > /dev/null"
        ],
        "perf script > /dev/null": [f"{timed(f'perf script -i {d}', 'psd', tmp)} > /dev/null"],
        "pmuprof report perf.data (native reader)": [
            timed(f"{py} -m pmuprof report {d} {sel} -o {out / 'r'} --force", "rep", tmp)
        ],
        "pmuprof report perf.data (through perf script)": [
            "PMUPROF_PERFDATA= " + timed(f"{py} -m pmuprof report {d} {sel} -o {out / 'rs'} --force", "reps", tmp)
        ],
    }
    if shutil.which("inferno-collapse-perf") and shutil.which("inferno-flamegraph"):
        steps["perf script | inferno-collapse-perf; inferno-flamegraph"] = [
            f"{timed(f'perf script -i {d}', 'inf_ps', tmp)} | {timed('inferno-collapse-perf', 'inf_col', tmp)} "
            f"> {out / 'inferno.folded'}",
            f"{timed('inferno-flamegraph', 'infg', tmp)} < {out / 'inferno.folded'} > {out / 'inferno.svg'}",
        ]
    return steps


def inline_pipelines(data: Path, comms: list[str], out: Path, tmp: Path) -> dict[str, list[str]]:
    d = shlex.quote(str(data))
    py = shlex.quote(sys.executable)
    sel = " ".join(f"--comm {shlex.quote(c)}" for c in comms)
    return {
        f"perf script -F {FLOOR_FIELDS} > /dev/null": [
            f"{timed(f'perf script -i {d} -F {FLOOR_FIELDS}', 'ps', tmp)} > /dev/null"
        ],
        f"perf script -F {READER_FIELDS} --no-inline > /dev/null": [
            f"{timed(f'perf script -i {d} -F {READER_FIELDS} --no-inline', 'psr', tmp)} > /dev/null"
        ],
        "pmuprof report perf.data (inline frames, the default)": [
            timed(f"{py} -m pmuprof report {d} {sel} -o {out / 'r'} --force", "rep", tmp)
        ],
        "pmuprof report perf.data (PMUPROF_NO_INLINE=1)": [
            "PMUPROF_NO_INLINE=1 " + timed(f"{py} -m pmuprof report {d} {sel} -o {out / 'rn'} --force", "repn", tmp)
        ],
    }


def folded_pipelines(folded: Path, out: Path, tmp: Path) -> dict[str, list[str]]:
    f = shlex.quote(str(folded))
    py = shlex.quote(sys.executable)
    steps = {}
    if shutil.which("inferno-flamegraph"):
        steps["inferno-flamegraph < folded > svg"] = [
            f"{timed('inferno-flamegraph', 'infg', tmp)} < {f} > {out / 'i.svg'}"
        ]
    steps["pmuprof report folded"] = [timed(f"{py} -m pmuprof report {f} -o {out / 'r'} --force", "rep", tmp)]
    steps["pmuprof report folded (Python parser, PMUPROF_FOLD=)"] = [
        "PMUPROF_FOLD= " + timed(f"{py} -m pmuprof report {f} -o {out / 'rp'} --force", "repp", tmp)
    ]
    return steps


def read_times(tmp: Path) -> list[tuple[float, float, int]]:
    out = []
    for f in tmp.glob("*.time"):
        parts = f.read_text().split()
        if len(parts) >= 4:
            e, u, s, m = parts[-4:]
            out.append((float(e), float(u) + float(s), int(m)))
        f.unlink()
    return out


def run_round(steps: dict[str, list[str]], tmp: Path, env: dict) -> dict[str, dict]:
    res = {}
    for name, cmds in steps.items():
        t0 = time.perf_counter()
        for cmd in cmds:
            proc = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], env=env, capture_output=True, text=True)
            if proc.returncode != 0:
                raise SystemExit(f"{name}: failed: {proc.stderr.strip()[-500:]}")
        wall = time.perf_counter() - t0
        procs = read_times(tmp)
        res[name] = {"wall": wall, "cpu": sum(p[1] for p in procs), "peak_mib": max(p[2] for p in procs) / 1024}
        print(
            f"  {name}: wall {wall:.2f} s, cpu {res[name]['cpu']:.2f} s, peak {res[name]['peak_mib']:.0f} MiB",
            flush=True,
        )
    return res


def summarize(rounds: list[dict]) -> dict[str, dict]:
    names = list(rounds[0])
    floor = names[0]
    table = {}
    for name in names:
        walls = [r[name]["wall"] for r in rounds]
        cpus = [r[name]["cpu"] for r in rounds]
        table[name] = {
            "wall_min": min(walls),
            "wall_median": statistics.median(walls),
            "wall_max": max(walls),
            "cpu_median": statistics.median(cpus),
            "peak_mib": max(r[name]["peak_mib"] for r in rounds),
            "wall_ratio": statistics.median(r[name]["wall"] / r[floor]["wall"] for r in rounds),
            "cpu_ratio": statistics.median(r[name]["cpu"] / r[floor]["cpu"] for r in rounds),
        }
    return table


def markdown(table: dict[str, dict]) -> str:
    floor = next(iter(table))
    lines = [
        f"| pipeline | wall median (min-max) | wall / `{floor}` | CPU median | CPU / floor | peak RSS |",
        "|---|---|---|---|---|---|",
    ]
    for name, t in table.items():
        lines.append(
            f"| `{name.replace('|', chr(92) + '|')}` | {t['wall_median']:.2f} s ({t['wall_min']:.2f}-{t['wall_max']:.2f})"
            f" | {t['wall_ratio']:.2f}x | {t['cpu_median']:.2f} s | {t['cpu_ratio']:.2f}x | {t['peak_mib']:.0f} MiB |"
        )
    return "\n".join(lines)


def input_facts(data: Path | None, folded: Path | None) -> dict:
    if data is not None:
        stats = subprocess.run(["perf", "report", "-i", str(data), "--stats"], capture_output=True, text=True).stdout
        samples = next((int(ln.split()[2]) for ln in stats.splitlines() if ln.strip().startswith("SAMPLE events:")), 0)
        return {"perf_data": str(data), "bytes": data.stat().st_size, "samples": samples}
    lines = samples = 0
    with open(folded, "rb") as fh:
        for line in fh:
            if line.strip() and not line.startswith(b"#"):
                lines += 1
                samples += int(line.rsplit(b" ", 1)[1])
    return {"folded": str(folded), "bytes": folded.stat().st_size, "distinct_stacks": lines, "samples": samples}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--data", type=Path, help="a perf.data")
    src.add_argument("--folded", type=Path, help="a folded-stacks file")
    ap.add_argument("--comm", action="append", default=[], help="the processes pmuprof reports (perf.data)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", type=Path, help="write the rounds and the table here")
    ap.add_argument("--inline-cost", action="store_true", help="perf.data: price inline frames (see above)")
    ap.add_argument("--reader", type=Path, help="perf.data: also the report with this pmuprof-perfdata (see above)")
    ap.add_argument("--reader-only", action="store_true", help="with --reader: only the two readers alone")
    args = ap.parse_args()
    if not (REPO / "native" / "build" / "pmuprof-fold").is_file():
        raise SystemExit("the native tools are not built: make -C native")
    WORK.mkdir(parents=True, exist_ok=True)
    out = Path(tempfile.mkdtemp(prefix="report-speed-", dir=WORK))
    tmp = out / "times"
    tmp.mkdir()
    if args.data:
        pipelines = inline_pipelines if args.inline_cost else perf_data_pipelines
        steps = pipelines(args.data, args.comm, out, tmp)
        if args.reader:
            readers = reader_pipelines(args.data, args.comm, out, tmp, args.reader.resolve())
            steps = {k: v for k, v in readers.items() if "alone" in k} if args.reader_only else {**steps, **readers}
    else:
        steps = folded_pipelines(args.folded, out, tmp)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    info = input_facts(args.data, args.folded)
    info["loadavg_start"] = open("/proc/loadavg").read().split()[:3]
    print(json.dumps(info), flush=True)
    rounds = []
    for i in range(args.rounds):
        print(f"round {i + 1}/{args.rounds}", flush=True)
        rounds.append(run_round(steps, tmp, env))
    table = summarize(rounds)
    info["loadavg_end"] = open("/proc/loadavg").read().split()[:3]
    if args.json:
        args.json.write_text(json.dumps({"info": info, "rounds": rounds, "table": table}, indent=1) + "\n")
    print(markdown(table))
    print("load average at start / end:", info["loadavg_start"], info["loadavg_end"])


if __name__ == "__main__":
    main()

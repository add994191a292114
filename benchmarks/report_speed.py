"""Report speed and size: perf.data -> report, side by side with perf script alone and inferno.

Usage (from the repository root, as root, after `make -C native`):

    python3 benchmarks/report_speed.py --generate            # record the >= 1M-sample perf.data once
    python3 benchmarks/report_speed.py --rounds 3            # time every pipeline, rounds interleaved

Every stage runs under `/usr/bin/time -f "%e %U %S %M"`: wall seconds, user and system CPU
seconds and peak RSS (KiB) per process. A pipeline's wall time is measured around the whole
shell pipeline; its CPU time is the sum over its processes; its peak RSS is the largest process.
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
FIELDS = "comm,pid,tid,ip,sym,symoff,dso"  # pmuprof's perf script fields (capture/perfcmd.py)
TIME = "/usr/bin/time"


def generate(data: Path, threads: int, seconds: int, freq: int) -> None:
    """Deep, varied call chains (20-59 frames) from report_speed.c, recorded with frame pointers."""
    exe = WORK / "report_speed_workload"
    subprocess.run(["gcc", "-O2", "-fno-omit-frame-pointer", "-o", str(exe), str(REPO / "benchmarks" / "report_speed.c"),
                    "-lpthread"], check=True)
    argv = ["perf", "record", "-q", "-F", str(freq), "-g", "-m", "1024", "-o", str(data), str(exe), str(threads), str(seconds)]
    print("$", shlex.join(argv), flush=True)
    subprocess.run(argv, check=True)


def timed(cmd: str, tag: str, tmp: Path) -> str:
    """Wrap one command of a pipeline in /usr/bin/time, writing to tmp/tag.time."""
    return f"{TIME} -f '%e %U %S %M' -o {tmp / (tag + '.time')} {cmd}"


def pipelines(data: Path, out: Path, tmp: Path, fold: Path, inferno: bool, comm: str) -> dict[str, list[tuple[str, str]]]:
    """name -> [(tag, shell command)], each entry one step run in order (a step may be a pipe)."""
    d = shlex.quote(str(data))
    c = shlex.quote(comm)
    minimal = f"perf script -i {d} -F {FIELDS} --no-inline --comms={c}"  # what pmuprof report runs
    default = f"perf script -i {d} --no-inline --comms={c}"
    py = shlex.quote(sys.executable)
    steps = {
        "perf script (pmuprof fields) > /dev/null": [("ps", f"{timed(minimal, 'ps', tmp)} > /dev/null")],
        "perf script (default fields) > /dev/null": [("psd", f"{timed(default, 'psd', tmp)} > /dev/null")],
        "perf script | pmuprof-fold": [("pf", f"{timed(minimal, 'pf_ps', tmp)} | {timed(str(fold), 'pf_fold', tmp)}"
                                             f" > {out / 'c.folded'}")],
        "pmuprof report perf.data -o DIR": [("rep", timed(f"{py} -m pmuprof report {d} --comm {c} -o {out / 'report'}", "rep", tmp))],
        "pmuprof report, Python folder (PMUPROF_FOLD=)": [
            ("repy", "PMUPROF_FOLD= " + timed(f"{py} -m pmuprof report {d} --comm {c} -o {out / 'report-py'}", "repy", tmp))],
    }
    if inferno:
        steps["perf script | inferno-collapse-perf | inferno-flamegraph"] = [
            ("inf", f"{timed(default, 'inf_ps', tmp)} | {timed('inferno-collapse-perf', 'inf_col', tmp)}"
                    f" > {out / 'inferno.folded'}"),
            ("infg", f"{timed('inferno-flamegraph', 'infg', tmp)} < {out / 'inferno.folded'} > {out / 'inferno.svg'}"),
        ]
    return steps


def read_times(tmp: Path) -> dict[str, tuple[float, float, int]]:
    out = {}
    for f in tmp.glob("*.time"):
        parts = f.read_text().split()
        if len(parts) >= 4 and parts[-4].replace(".", "").isdigit():
            e, u, s, m = parts[-4:]
            out[f.stem] = (float(e), float(u) + float(s), int(m))
        f.unlink()
    return out


def run_round(steps: dict, tmp: Path, env: dict) -> dict[str, dict]:
    res = {}
    for name, cmds in steps.items():
        wall = 0.0
        for _, cmd in cmds:
            t0 = time.perf_counter()
            proc = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], env=env, capture_output=True, text=True)
            wall += time.perf_counter() - t0
            if proc.returncode != 0:
                raise SystemExit(f"{name}: failed: {proc.stderr.strip()[-500:]}")
        procs = read_times(tmp)
        res[name] = {"wall": wall, "cpu": sum(p[1] for p in procs.values()),
                     "peak_rss_kib": max(p[2] for p in procs.values()), "procs": procs}
        print(f"  {name}: wall {wall:.2f} s, cpu {res[name]['cpu']:.2f} s, peak {res[name]['peak_rss_kib'] / 1024:.0f} MiB",
              flush=True)
    return res


def facts(data: Path, fold: Path, tmp: Path) -> dict:
    stats = subprocess.run(["perf", "report", "-i", str(data), "--stats"], capture_output=True, text=True).stdout
    samples = next((int(l.split()[2]) for l in stats.splitlines() if l.strip().startswith("SAMPLE events:")), 0)
    size = subprocess.run(f"perf script -i {shlex.quote(str(data))} -F {FIELDS} --no-inline | wc -c", shell=True,
                          capture_output=True, text=True).stdout.strip()
    size_d = subprocess.run(f"perf script -i {shlex.quote(str(data))} --no-inline | wc -c", shell=True,
                            capture_output=True, text=True).stdout.strip()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    return {"perf_data_bytes": data.stat().st_size, "samples": samples, "script_bytes_minimal": int(size or 0),
            "script_bytes_default": int(size_d or 0), "cpu": cpu, "nproc": os.cpu_count(),
            "loadavg_start": open("/proc/loadavg").read().split()[:3], "fold": str(fold)}


def summarize(rounds: list[dict], info: dict, out: Path) -> dict:
    names = list(rounds[0])
    floor = statistics.median(r[names[0]]["wall"] for r in rounds)
    floor_cpu = statistics.median(r[names[0]]["cpu"] for r in rounds)
    table = {}
    for name in names:
        walls = [r[name]["wall"] for r in rounds]
        cpus = [r[name]["cpu"] for r in rounds]
        table[name] = {"wall_min": min(walls), "wall_median": statistics.median(walls),
                       "cpu_median": statistics.median(cpus), "peak_rss_mib": max(r[name]["peak_rss_kib"] for r in rounds) / 1024,
                       "wall_ratio_vs_perf_script": statistics.median(walls) / floor,
                       "cpu_ratio_vs_perf_script": statistics.median(cpus) / floor_cpu}
    sizes = {p.name: p.stat().st_size for p in [out / "report" / "report.html", out / "c.folded", out / "inferno.svg",
                                                out / "inferno.folded", out / "report" / "stacks.folded"] if p.is_file()}
    return {"info": info, "table": table, "sizes": sizes, "rounds": rounds,
            "loadavg_end": open("/proc/loadavg").read().split()[:3]}


def markdown(s: dict) -> str:
    lines = ["| pipeline | wall median (min) | ratio vs perf script | CPU user+sys | CPU ratio | peak RSS |",
             "|---|---|---|---|---|---|"]
    for name, t in s["table"].items():
        cell = name.replace("|", "\\|")
        lines.append(f"| `{cell}` | {t['wall_median']:.2f} s ({t['wall_min']:.2f}) | {t['wall_ratio_vs_perf_script']:.2f}x"
                     f" | {t['cpu_median']:.2f} s | {t['cpu_ratio_vs_perf_script']:.2f}x | {t['peak_rss_mib']:.0f} MiB |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=WORK / "perf.data")
    ap.add_argument("--generate", action="store_true", help="record --data first (deep-stack workload)")
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--seconds", type=int, default=140)
    ap.add_argument("--freq", type=int, default=50000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--comm", default="report_speed_wo", help="the process to report (perf's 15-character comm)")
    ap.add_argument("--skip", action="append", default=[], help="skip pipelines whose name contains this text")
    ap.add_argument("--json", type=Path, default=WORK / "report_speed.json")
    args = ap.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    if args.generate:
        generate(args.data, args.threads, args.seconds, args.freq)
    fold = REPO / "native" / "build" / "pmuprof-fold"
    if not fold.is_file():
        raise SystemExit("pmuprof-fold is not built: make -C native")
    if shutil.which("stackcollapse-perf.pl"):
        print("note: FlameGraph's Perl scripts are installed but not timed here (run them by hand)")
    out = Path(tempfile.mkdtemp(prefix="report-speed-", dir=WORK))
    tmp = out / "times"
    tmp.mkdir()
    steps = pipelines(args.data, out, tmp, fold, bool(shutil.which("inferno-collapse-perf")), args.comm)
    steps = {k: v for k, v in steps.items() if not any(s in k for s in args.skip)}
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    info = facts(args.data, fold, tmp)
    print(json.dumps(info, indent=1), flush=True)
    rounds = []
    for i in range(args.rounds):
        print(f"round {i + 1}/{args.rounds}", flush=True)
        rounds.append(run_round(steps, tmp, env))
    summary = summarize(rounds, info, out)
    args.json.write_text(json.dumps(summary, indent=1))
    print(markdown(summary))
    print("sizes:", json.dumps(summary["sizes"]), "load average at end:", summary["loadavg_end"])


if __name__ == "__main__":
    main()

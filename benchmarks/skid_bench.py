#!/usr/bin/env python3
"""Time pmuprof-helper skid correction on a large binary's 50 largest functions (default /usr/sbin/mariadbd).

Usage: python3 benchmarks/skid_bench.py [BINARY] [--functions 50] [--samples-per-function 200] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import struct
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pmuprof.paths import helper_path  # noqa: E402


def function_symbols(path: Path) -> list[tuple[str, int, int]]:
    """(name, value, size) of FUNC symbols from .symtab, else .dynsym."""
    data = path.read_bytes()
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    for want in (2, 11):  # SHT_SYMTAB, SHT_DYNSYM
        out = []
        for sec in secs:
            if sec[1] != want:
                continue
            strtab = secs[sec[6]]
            for off in range(sec[4], sec[4] + sec[5], sec[9]):
                name_off, info, _o, shndx, value, size = struct.unpack_from("<IBBHQQ", data, off)
                if info & 0xF == 2 and shndx and value and size:
                    end = data.index(b"\0", strtab[4] + name_off)
                    out.append((data[strtab[4] + name_off : end].decode(), value, size))
        if out:
            return out
    return []


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("binary", nargs="?", default="/usr/sbin/mariadbd")
    ap.add_argument("--functions", type=int, default=50)
    ap.add_argument("--samples-per-function", type=int, default=200)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    helper = helper_path()
    if helper is None:
        print("pmuprof-helper not built: make -C native", file=sys.stderr)
        return 1
    syms = sorted(function_symbols(Path(args.binary)), key=lambda s: -s[2])
    seen, top = set(), []
    for name, _value, size in syms:
        if name not in seen:
            seen.add(name)
            top.append((name, size))
        if len(top) == args.functions:
            break
    rng = random.Random(42)
    lines = [
        f"{name}\t{rng.randrange(size):x}\t{rng.randint(1, 9)}\n"
        for name, size in top
        for _ in range(args.samples_per_function)
    ]
    stdin = "".join(lines)
    times, cpu = [], []
    for _ in range(args.runs):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        res = subprocess.run(
            [str(helper), "skid", "--binary", args.binary, "--hot-only"],
            input=stdin,
            capture_output=True,
            text=True,
            check=True,
        )
        times.append(time.perf_counter() - t0)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    out = json.loads(res.stdout)
    insns = sum(f.get("instruction_count", 0) for f in out["functions"])
    bytes_ = sum(size for _, size in top)
    print(
        json.dumps(
            {
                "binary": args.binary,
                "build_id": out["build_id"],
                "functions": len(out["functions"]),
                "function_errors": out["function_errors"],
                "bytes_decoded": bytes_,
                "instructions_decoded": insns,
                "sample_lines": len(lines),
                "wall_s_best": round(min(times), 4),
                "wall_s_median": round(sorted(times)[len(times) // 2], 4),
                "cpu_s_best": round(min(cpu), 4),
                "cpu_s_median": round(sorted(cpu)[len(cpu) // 2], 4),
                "runs": args.runs,
                "load_average_1m": round(os.getloadavg()[0], 1),
            },
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

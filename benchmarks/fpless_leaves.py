"""How many on-CPU samples hide a caller: their innermost user frame is in a library without frame pointers.

Usage (from the repository root; a perf.data recorded with -g, frame pointers):

    python3 benchmarks/fpless_leaves.py /tmp/pmuprof-bench/m114/perf.data --comm mariadbd

A frame-pointer walk that starts in a function which never set up its frame pointer reads its caller's frame: the
chain goes on at the caller's caller, and the function that called into the library is missing (the
off-CPU tracer recovers it from the library's CFI; on-CPU samples are not recovered, issue 21). This
counts, per library, the samples whose first user frame is there, with the library's frame-pointer
verdict from tools.elf.symbol_summary (the prologues of its 400 largest functions). Kernel frames above
a user leaf do not matter: the user chain starts at the registers saved at kernel entry.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections import Counter
from pathlib import Path
from collections.abc import Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's pmuprof

from pmuprof.arch import KERNEL_START  # noqa: E402
from pmuprof.tools.elf import symbol_summary  # noqa: E402


def user_dsos(data: Path, comms: list[str]) -> Iterator[list[str]]:
    """Each sample's user frames, innermost first, as the DSO each one is in (perf script -F comm,ip,dso)."""
    argv = ["perf", "script", "-i", str(data), "-F", "comm,ip,dso", "--no-inline", "--comms", ",".join(comms)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, errors="replace")
    frames: list[str] | None = None
    assert proc.stdout is not None
    for line in proc.stdout:
        if not line.startswith("\t"):  # a sample's header line (call-chain lines start with a tab)
            if line.strip():
                if frames is not None:
                    yield frames
                frames = []
            continue
        ip, _, rest = line.strip().partition(" ")
        if frames is not None and int(ip, 16) < KERNEL_START:
            frames.append(rest.rsplit("(", 1)[-1].rstrip(")"))
    if frames is not None:
        yield frames
    proc.wait()


def leaf_dsos(data: Path, comms: list[str]) -> tuple[Counter[str], int]:
    """Samples per DSO of their innermost user frame, and the samples read."""
    leaves: Counter[str] = Counter()
    samples = 0
    for frames in user_dsos(data, comms):
        samples += 1
        if frames:
            leaves[frames[0]] += 1
    return leaves, samples


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", type=Path)
    ap.add_argument("--comm", action="append", required=True)
    args = ap.parse_args()
    leaves, samples = leaf_dsos(args.data, args.comm)
    print(f"{samples} samples of {', '.join(args.comm)}; innermost user frame by library:")
    by_verdict: Counter[str] = Counter()
    for dso, n in leaves.most_common():
        fp = symbol_summary(Path(dso)).get("frame_pointers", "unreadable") if dso.startswith("/") else "absent"
        by_verdict[fp] += n  # the vdso's functions set up no frame either
        print(f"  {100 * n / samples:6.2f} %  {n:8d}  frame pointers {fp:10s}  {dso}")
    for fp, n in by_verdict.most_common():
        print(
            f"innermost user frame in a library whose frame pointers are {fp}: {n} ({100 * n / max(samples, 1):.2f} %)"
        )


if __name__ == "__main__":
    main()

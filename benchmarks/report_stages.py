"""CPU of each stage of `pmuprof report` in one process: imports, load, analyse, threads, diagnose, write.

Usage (from the repository root, after `make -C native`):

    python3 benchmarks/report_stages.py /tmp/foldbench/perf.data --comm fgen --comm python3
    PMUPROF_NO_INLINE=1 python3 benchmarks/report_stages.py /tmp/foldbench/perf.data --comm fgen --comm python3

Each figure is user + system seconds of this process and of the children it waited for (the native
reader runs in `load`), taken around the library calls `pmuprof report` makes. One run: repeat it, and
read whole-process pairs (benchmarks/report_speed.py) for ratios.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's pmuprof


def _cpu() -> float:
    kids = os.times()
    return time.process_time() + kids.children_user + kids.children_system


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input", type=Path)
    parser.add_argument("--comm", action="append", default=[])
    parser.add_argument("-o", "--output", type=Path, help="where the reports go (default: a temporary directory)")
    args = parser.parse_args()
    from pmuprof.analysis import threads
    from pmuprof.analysis.analyse import analyse, with_quality
    from pmuprof.analysis.archive import kept_symfs, with_symfs
    from pmuprof.analysis.load import Recording, load
    from pmuprof.findings import engine
    from pmuprof.pipeline import Options, with_choice
    from pmuprof.report import write_outputs

    marks = [("imports", _cpu())]
    options = with_choice(Options(), comms=tuple(args.comm)) if args.comm else Options()
    with kept_symfs(args.input, options.lookup.symfs) as symfs:  # as pipeline.build_profile
        options = with_symfs(options, symfs)
        loaded = load(args.input, options.choice, options.lookup.symfs)
        marks.append(("load", _cpu()))
        profile = analyse(loaded, options.lookup) if isinstance(loaded, Recording) else with_quality(loaded)
        marks.append(("analyse", _cpu()))
    profile = threads.attach(profile)
    marks.append(("threads", _cpu()))
    diagnosis = engine.diagnose(profile)
    marks.append(("diagnose", _cpu()))
    with tempfile.TemporaryDirectory(prefix="pmuprof-stages-") as tmp:
        out = args.output or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        write_outputs(profile, diagnosis, out)
        marks.append(("write", _cpu()))
    parts = [f"{name} {at - (marks[i - 1][1] if i else 0.0):.2f}" for i, (name, at) in enumerate(marks)]
    print(" ".join(parts) + f" total {marks[-1][1]:.2f} (CPU seconds)")


if __name__ == "__main__":
    main()

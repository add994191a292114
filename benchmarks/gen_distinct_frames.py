"""Write a folded file of N distinct stacks, each ending in two frame names no other stack has (2N distinct
names: JIT code, template instances), to measure what distinct frames cost the report.

    python3 benchmarks/gen_distinct_frames.py 1000000 /tmp/pmuprof-bench/2m-frames.folded [--seed 7]
    /usr/bin/time -f "%e s %M KiB" python3 -m pmuprof report /tmp/pmuprof-bench/2m-frames.folded -o DIR
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

PREFIX = "mysqld;start_thread;handle_one_connection;do_command;dispatch_command"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stacks", type=int)
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as out:
        for i in range(args.stacks):
            out.write(
                f"{PREFIX};Item_func_{i:07d}::val_int(Arg_comparator<long, {i % 977}>);"
                f"tmpl_instance_{i:07d}_leaf {rng.randint(1, 50)}\n"
            )


if __name__ == "__main__":
    main()

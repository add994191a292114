#!/usr/bin/env python3
"""The committed report outputs of the example run directories: each input re-reported as the CLI does it.

    python3 tests/regen_examples.py            # write every committed output again (after a change meant to alter them)
    python3 tests/regen_examples.py --check    # only say which differ (tests/unit/test_example_outputs.py's check)

An example is a run directory under examples/ (run.json and stacks.folded), whose outputs sit beside its inputs,
or a recorded incident under tests/data/incidents/mariadb1011/, whose outputs sit under
tests/data/incidents/reports/ (record_incidents.py keeps the recordings to what ``report`` reads). Each is
reported the one way: its inputs (the directory without its outputs) copied to the same path under a scratch
folder, and ``pmuprof report PATH -o OUT`` run there in this process, so the input the reports name (findings.json
``source``, report.md's and report.html's run details) is the repository path, as a reader would type it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # this tree's pmuprof, as the tests use it (not an installed copy)

from pmuprof.cli.main import main  # noqa: E402
from pmuprof.model import rundir  # noqa: E402

EXAMPLES = REPO / "examples"
INCIDENTS = REPO / "tests" / "data" / "incidents" / "mariadb1011"
INCIDENT_REPORTS = REPO / "tests" / "data" / "incidents" / "reports" / "mariadb1011"
OUTPUTS = tuple(sorted(rundir.REPORT_FILES))  # what `pmuprof report` writes: findings.json, flame.svg, report.*
REGEN = "python3 tests/regen_examples.py"

# Directories under examples/ with outputs but not the inputs to make them again: kept as what pmuprof wrote
# then (the walkthroughs quote them), never re-reported. A directory here must not be a run directory with
# stacks (it would be re-reported), and every other directory with a findings.json must be one.
OUTPUTS_ONLY = {
    "examples/mariadb-output/delay4": "the capture after the fix in walkthrough-mariadb.md; its stacks were not kept",
    "examples/demo-output/index-dive-delay30": "walkthrough.md section 9: `pmuprof demo` outputs, stacks not kept",
    "examples/demo-output/index-dive-delay6": "walkthrough.md section 9: `pmuprof demo` outputs, stacks not kept",
}


@dataclass(frozen=True)
class Example:
    path: str  # the input directory, relative to the repository (the path reported)
    outputs: Path  # where its committed outputs are

    @property
    def inputs(self) -> Path:
        return REPO / self.path


def examples() -> list[Example]:
    """Every example run directory and recorded incident, in path order."""
    runs = sorted(f.parent for f in EXAMPLES.rglob(rundir.RUN_JSON))
    found = [Example(_rel(d), d) for d in runs if _reportable(d)]
    found += [Example(_rel(d), INCIDENT_REPORTS / d.name) for d in sorted(INCIDENTS.iterdir()) if _reportable(d)]
    return found


def unlisted_outputs() -> list[str]:
    """Directories under examples/ holding report outputs that are neither re-reported nor in OUTPUTS_ONLY."""
    covered = {e.path for e in examples()} | set(OUTPUTS_ONLY)
    return sorted(p for p in {_rel(f.parent) for f in EXAMPLES.rglob(rundir.FINDINGS_JSON)} if p not in covered)


def report(example: Example, scratch: Path) -> dict[str, bytes]:
    """``pmuprof report`` of the example's inputs (copied under ``scratch``): each output's name and bytes."""
    copy = scratch / "repo" / example.path
    shutil.copytree(example.inputs, copy, ignore=lambda _d, names: [n for n in names if n in OUTPUTS])
    out = scratch / "out"
    err = io.StringIO()
    with _cwd(scratch / "repo"), contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(["report", example.path, "-o", str(out)])
    if code:
        raise RuntimeError(f"pmuprof report {example.path} exited {code}: {err.getvalue().strip()}")
    return {name: (out / name).read_bytes() for name in OUTPUTS}


def committed(example: Example) -> dict[str, bytes | None]:
    return {name: (p.read_bytes() if (p := example.outputs / name).is_file() else None) for name in OUTPUTS}


def differing(example: Example, scratch: Path) -> list[str]:
    """The outputs whose committed bytes are not what the current code writes."""
    made, kept = report(example, scratch), committed(example)
    return [name for name in OUTPUTS if made[name] != kept[name]]


def regenerate(example: Example, scratch: Path) -> list[str]:
    """Write the outputs the current code makes over the committed ones; return those that changed."""
    made, kept = report(example, scratch), committed(example)
    example.outputs.mkdir(parents=True, exist_ok=True)
    changed = [name for name in OUTPUTS if made[name] != kept[name]]
    for name in changed:
        (example.outputs / name).write_bytes(made[name])
    return changed


@contextlib.contextmanager
def _cwd(path: Path) -> Iterator[None]:
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def _reportable(d: Path) -> bool:
    return rundir.is_run_dir(d) and (d / rundir.STACKS).is_file()


def _rel(d: Path) -> str:
    return d.relative_to(REPO).as_posix()


def run(check: bool) -> int:
    status = 0
    for path in unlisted_outputs():
        print(f"{path}: report outputs without the inputs to make them again: add it to OUTPUTS_ONLY", file=sys.stderr)
        status = 1
    for example in examples():
        with tempfile.TemporaryDirectory(prefix="pmuprof-regen-") as scratch:
            names = differing(example, Path(scratch)) if check else regenerate(example, Path(scratch))
        if names:
            print(f"{example.path}: {', '.join(names)} {'differ' if check else 'written'}")
            status = status or int(check)
    return status


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="say which outputs differ, write nothing")
    sys.exit(run(parser.parse_args().check))

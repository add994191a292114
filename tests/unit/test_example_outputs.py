"""The committed outputs of every example run directory (examples/) and recorded incident (tests/data/incidents/)
are byte for byte what ``pmuprof report`` writes from their inputs today (tests/regen_examples.py writes them)."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

import regen_examples as rx

EXAMPLES = rx.examples()
HOW = (
    f"if the change is meant to alter the outputs, write them again with `{rx.REGEN}`, then check that the "
    "walkthroughs and docs quoting them still say what they say (docs/development.md, 'Example outputs')"
)


def _excerpt(made: bytes, kept: bytes | None, name: str, lines: int = 12) -> str:
    """The first lines of a unified diff of one output (committed → made), for the failure message."""
    old = (kept or b"").decode(errors="replace").splitlines()
    diff = difflib.unified_diff(
        old, made.decode(errors="replace").splitlines(), f"committed/{name}", f"made/{name}", n=0, lineterm=""
    )
    return "\n".join(line[:200] for _, line in zip(range(lines), diff))


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.path for e in EXAMPLES])
def test_outputs_are_what_report_writes(example: rx.Example, tmp_path: Path) -> None:
    made, kept = rx.report(example, tmp_path), rx.committed(example)
    differ = [name for name in rx.OUTPUTS if made[name] != kept[name]]
    first = next(iter(differ), None)
    assert not differ, (
        f"{example.path}: {', '.join(differ)} differ from the committed ones in "
        f"{example.outputs.relative_to(rx.REPO)}; {HOW}.\n" + _excerpt(made[first], kept[first], first)
    )


def test_every_example_with_outputs_is_reported_or_listed() -> None:
    assert not rx.unlisted_outputs(), "report outputs without their inputs: add them to OUTPUTS_ONLY with why"
    paths = {e.path for e in EXAMPLES}
    # the discovery finds the run directories the walkthroughs show and every recorded incident kind
    assert {"examples/demo-output/mixed", "examples/mariadb-output/delay200"} <= paths
    recorded = {p.name for p in rx.INCIDENTS.iterdir() if (p / "truth.json").is_file()}
    assert {Path(p).name for p in paths if p.startswith("tests/")} == recorded
    assert {p.name for p in rx.INCIDENT_REPORTS.iterdir()} == recorded, "a report kept for no recording"


@pytest.mark.parametrize("path", sorted(rx.OUTPUTS_ONLY))
def test_an_outputs_only_directory_cannot_be_reported_again(path: str) -> None:
    folder = rx.REPO / path
    assert (folder / "findings.json").is_file(), f"{path}: listed in OUTPUTS_ONLY but holds no outputs"
    assert not (folder / "stacks.folded").is_file(), f"{path} has its stacks now: take it out of OUTPUTS_ONLY"

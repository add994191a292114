"""The native programs' files call one another in one direction: no file calls (at link level) into a file
that calls back into it, directly or through others (issue 25: fold.c/finish.c/frames.c, dso.c/elfsym.c and
kallsyms.c/kcore.c/kernel.c were call circles)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

NATIVE = Path(__file__).resolve().parents[2] / "native"
PROGRAMS = ("fold", "perfdata", "helper", "offcpu")


def _symbols(obj: Path) -> tuple[set[str], set[str]]:
    defined, used = set(), set()
    for line in subprocess.run(["nm", str(obj)], capture_output=True, text=True, check=True).stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBR":
            defined.add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            used.add(parts[1])
    return defined, used


def _cycles(graph: dict[str, set[str]]) -> list[str]:
    def reaches(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in graph[todo.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    return sorted(f for f in graph if f in reaches(f))


@pytest.mark.parametrize("program", PROGRAMS)
def test_no_call_circles(program, tmp_path):
    cc = shutil.which("gcc") or shutil.which("cc")
    if not cc or not shutil.which("nm"):
        pytest.skip("needs a C compiler and nm")
    sources = sorted(p for p in (NATIVE / program).glob("*.c") if not p.name.endswith(".bpf.c"))
    tables = {}
    for src in sources:
        obj = tmp_path / (src.stem + ".o")
        res = subprocess.run(
            [cc, "-c", "-O0", "-w", f"-I{NATIVE / program}", f"-I{NATIVE}", "-o", str(obj), str(src)],
            capture_output=True,
            text=True,
        )
        if res.returncode:
            pytest.skip(f"{src.name} does not compile here without its libraries' headers: {res.stderr[:200]}")
        tables[src.name] = _symbols(obj)
    graph = {a: {b for b in tables if b != a and tables[a][1] & tables[b][0]} for a in tables}
    assert _cycles(graph) == [], {f: sorted(graph[f]) for f in _cycles(graph)}

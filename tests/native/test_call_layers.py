"""The native code's files call one another in one direction: no file calls (at link level) into a file
that calls back into it, directly or through others (issue 25: fold.c/finish.c/frames.c, dso.c/elfsym.c and
kallsyms.c/kcore.c/kernel.c were call circles); the library (native/lib/) is below the four programs that
link it and calls none of them; and a program's files include only their own headers, the library's and
arch/'s, never another program's (issue 36: perfdata compiled fold's files, the helper perfdata's demangler)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

NATIVE = Path(__file__).resolve().parents[2] / "native"
PROGRAMS = ("fold", "perfdata", "helper", "offcpu")
SHARED = ("lib", "arch")  # what every program may include
# Compiled as the Makefile compiles them with every optional library (code under #ifdef HAVE_* included).
FEATURES = ("-DHAVE_LIBPFM=1", "-DHAVE_ELFUTILS=1", "-DHAVE_LIBIBERTY=1", "-DHAVE_CAPSTONE=1")


def _feature_flags() -> list[str]:
    pkg = shutil.which("pkg-config")
    res = subprocess.run([pkg, "--cflags", "capstone"], capture_output=True, text=True) if pkg else None
    return [*FEATURES, *(res.stdout.split() if res and res.returncode == 0 else [])]


def _symbols(obj: Path) -> tuple[set[str], set[str]]:
    defined, used = set(), set()
    for line in subprocess.run(["nm", str(obj)], capture_output=True, text=True, check=True).stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBR":
            defined.add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            used.add(parts[1])
    return defined, used


def _tables(folder: str, tmp: Path) -> dict[str, tuple[set[str], set[str]]]:
    """(defined, used) symbols of each of folder's C files, keyed 'folder/file.c'."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if not cc or not shutil.which("nm"):
        pytest.skip("needs a C compiler and nm")
    tables = {}
    for src in sorted(p for p in (NATIVE / folder).glob("*.c") if not p.name.endswith(".bpf.c")):
        obj = tmp / f"{folder}-{src.stem}.o"
        res = subprocess.run(
            [cc, "-c", "-O0", "-w", *_feature_flags(), f"-I{NATIVE / folder}", f"-I{NATIVE}", "-o", str(obj), str(src)],
            capture_output=True,
            text=True,
        )
        if res.returncode:
            pytest.skip(f"{src.name} does not compile here without its libraries' headers: {res.stderr[:200]}")
        tables[f"{folder}/{src.name}"] = _symbols(obj)
    return tables


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


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """_tables(folder), compiled once for the module (lib/ is read by all eight tests, a program by two)."""
    made: dict[str, dict[str, tuple[set[str], set[str]]]] = {}

    def of(folder: str) -> dict[str, tuple[set[str], set[str]]]:
        if folder not in made:
            made[folder] = _tables(folder, tmp_path_factory.mktemp(folder))
        return made[folder]

    return of


@pytest.mark.parametrize("program", PROGRAMS)
def test_no_call_circles(program, tables):
    """A program's files and the library's, linked as the program is: no circle."""
    tables = {**tables("lib"), **tables(program)}
    assert any(name.startswith(program + "/") for name in tables)
    graph = {a: {b for b in tables if b != a and tables[a][1] & tables[b][0]} for a in tables}
    assert _cycles(graph) == [], {f: sorted(graph[f]) for f in _cycles(graph)}


@pytest.mark.parametrize("program", PROGRAMS)
def test_the_library_calls_into_no_program(program, tables):
    """lib/ is below the programs: what it uses comes from itself or the system, never from a program."""
    lib, prog = tables("lib"), tables(program)
    up = sorted(f"{a} -> {b}" for a in lib for b in prog if lib[a][1] & prog[b][0])
    assert up == []
    assert any(lib[a][0] & prog[b][1] for a in lib for b in prog), f"{program} links the library for nothing"


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def test_programs_include_only_their_own_headers_the_library_and_arch():
    wrong = []
    for folder in (*PROGRAMS, *SHARED):
        for src in sorted((NATIVE / folder).glob("*.[chS]")):
            for name in INCLUDE.findall(src.read_text()):
                here = (src.parent / name).is_file() and "/" not in name
                shared = name.split("/")[0] in SHARED and (NATIVE / name).is_file()
                if not (here or (shared and folder != "arch") or (folder == "arch" and "/" not in name)):
                    wrong.append(f"{folder}/{src.name}: {name}")
    assert wrong == []

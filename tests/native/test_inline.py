"""Inline frames: pmuprof-perfdata --inline against addr2line -i, on a program with known inlined helpers.

progs/inline_chain.c is built -O2 -g: the PAUSE loops of latch_a_lock / latch_b_lock (both inlined, both
inlining spin_pause) land in worker, which outer_a / outer_b call through the inlined mid_a / mid_b. Only
DWARF says which latch helper a sample spins for and which mid_ called worker.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from native_support import PROGS, native_binary

_LINE = re.compile(r"^\t\s*(?P<addr>[0-9a-f]+) (?P<sym>.+?)(?P<off>\+0x[0-9a-f]+)? \((?P<dso>.*)\)$")


def _need(*tools: str) -> None:
    for tool in tools:
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed")


@pytest.fixture(scope="module")
def inline_lab(tmp_path_factory) -> dict:
    _need("gcc", "perf", "addr2line", "readelf")
    tmp = tmp_path_factory.mktemp("inline")
    exe, bare = tmp / "inline_chain", tmp / "inline_chain_nodwarf"
    src = PROGS / "inline_chain.c"
    for out, debug in ((exe, ["-g"]), (bare, [])):
        subprocess.run(
            ["gcc", "-O2", *debug, "-fno-omit-frame-pointer", "-o", str(out), str(src)], check=True, capture_output=True
        )
    data = {}
    for name, prog in (("dwarf", exe), ("bare", bare)):
        data[name] = tmp / f"{name}.data"
        res = subprocess.run(
            [
                "perf",
                "record",
                "-q",
                "-F",
                "999",
                "-g",
                "-e",
                "cpu-clock",
                "-o",
                str(data[name]),
                "--",
                str(prog),
                "8000",
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )  # loaded CI
        if res.returncode != 0:
            pytest.skip(f"perf record does not work here ({res.returncode}): {res.stderr.strip()[-200:]}")
    return {"tmp": tmp, "exe": exe, "bare": bare, "data": data, "reader": native_binary("pmuprof-perfdata")}


def _read(lab: dict, which: str, *opts: str) -> tuple[str, str, str]:
    """(folded stacks, leaves, perf script text) of the reader on one recording."""
    leaves = lab["tmp"] / f"{which}-{len(opts)}.leaves"
    res = subprocess.run(
        [
            str(lab["reader"]),
            "--script",
            "--leaves",
            str(leaves),
            "--comm",
            "inline_chain",
            "--comm",
            "inline_chain_nodwarf",
            *opts,
            str(lab["data"][which]),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-500:]
    return res.stdout, leaves.read_text(), res.stderr


def _samples(script: str) -> list[list[tuple[int, str, str]]]:
    """Each sample's call-chain lines as (address, symbol, dso)."""
    out: list[list[tuple[int, str, str]]] = []
    for block in script.split("\n\n"):
        frames = [m for m in (_LINE.match(line) for line in block.splitlines()) if m]
        if frames:
            out.append([(int(m["addr"], 16), m["sym"], m["dso"]) for m in frames])
    return out


def _file_to_vaddr(exe: Path) -> list[tuple[int, int, int]]:
    """(offset, size, vaddr) of the PT_LOAD segments: the reader prints file offsets, addr2line wants addresses."""
    text = subprocess.run(["readelf", "-lW", str(exe)], capture_output=True, text=True, check=True).stdout
    loads = []
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "LOAD":
            loads.append((int(parts[1], 16), int(parts[4], 16), int(parts[2], 16)))
    return loads


def _addr2line(exe: Path, vaddrs: list[int]) -> dict[int, list[str]]:
    """addr2line -i's function names per address, innermost first (the last is the out-of-line function)."""
    query = "".join(f"0x{a:x}\n0x0\n" for a in vaddrs)  # 0x0 answers '??': the end of each address's chain
    text = subprocess.run(
        ["addr2line", "-i", "-f", "-e", str(exe)], input=query, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    names = text[0::2]
    out: dict[int, list[str]] = {}
    it = iter(vaddrs)
    chain: list[str] = []
    for name in names:
        if name == "??":
            out[next(it)] = chain
            chain = []
        else:
            chain.append(name)
    return out


def test_inline_chains_are_addr2lines(inline_lab):
    """Every frame of the program gets exactly the inlined calls addr2line -i names for it: the sample's
    own address as it is, a return address at the call (address - 1)."""
    _, _, script = _read(inline_lab, "dwarf", "--inline")
    loads = _file_to_vaddr(inline_lab["exe"])
    seen: dict[tuple[int, bool], list[str]] = {}
    for frames in _samples(script):
        pending: list[str] = []
        first_user = True
        for addr, sym, dso in frames:
            if dso == "inlined":
                pending.append(sym)
                continue
            if dso == str(inline_lab["exe"]):
                vaddr = next(v + addr - o for o, size, v in loads if o <= addr < o + size)
                key = (vaddr - (0 if first_user else 1), first_user)
                assert seen.setdefault(key, pending) == pending
            if not dso.startswith("[kernel"):
                first_user = False
            pending = []
    assert len(seen) >= 4
    truth = _addr2line(inline_lab["exe"], sorted({v for v, _ in seen}))
    for (vaddr, _), inlined in seen.items():
        assert inlined == truth[vaddr][:-1], f"0x{vaddr:x}: {inlined} != addr2line's {truth[vaddr]}"


def test_folded_stacks_name_the_inlined_latch_and_caller(inline_lab):
    folded, _, _ = _read(inline_lab, "dwarf", "--inline")
    counts: Counter[str] = Counter()
    for line in folded.splitlines():
        stack, _, n = line.rpartition(" ")
        for outer in ("outer_a;mid_a_[i]", "outer_b;mid_b_[i]"):
            for latch in ("latch_a_lock_[i]", "latch_b_lock_[i]"):
                if f"{outer};worker;{latch};spin_pause_[i]" in stack:
                    counts[(outer, latch)] += int(n)
    assert len(counts) == 4, counts  # both callers, both latches: four towers the names alone merge
    assert sum(counts.values()) > 100


def test_without_inline_frames_the_stacks_and_leaves_are_unchanged(inline_lab):
    """Taking the _[i] frames out gives the stacks without --inline, sample for sample; leaves (skid
    correction's input) stay the real frame's address."""
    plain, plain_leaves, _ = _read(inline_lab, "dwarf")
    inl, inl_leaves, _ = _read(inline_lab, "dwarf", "--inline")
    assert "_[i]" in inl and "_[i]" not in plain
    merged: Counter[str] = Counter()
    for line in inl.splitlines():
        stack, _, n = line.rpartition(" ")
        merged[";".join(f for f in stack.split(";") if not f.endswith("_[i]"))] += int(n)
    assert merged == Counter({s: int(n) for s, _, n in (line.rpartition(" ") for line in plain.splitlines())})
    assert inl_leaves == plain_leaves


def test_a_binary_without_dwarf_reads_as_without_inline(inline_lab):
    """The program's own frames come out the same with --inline. A sample in a library whose debug file is
    installed (ld.so's startup code, with libc6-dbg) may gain inline frames there: that is the library's
    DWARF at work, so only the program's frames are compared, and the stacks without inline frames."""
    plain = _read(inline_lab, "bare")
    inl = _read(inline_lab, "bare", "--inline")
    assert "_[i]" not in plain[0]
    bare = str(inline_lab["bare"])
    own = lambda script: [[f for f in chain if f[2] == bare] for chain in _samples(script)]  # noqa: E731
    assert own(inl[2]) == own(plain[2]) and any(own(plain[2]))
    merged: Counter[str] = Counter()
    for line in inl[0].splitlines():
        stack, _, n = line.rpartition(" ")
        merged[";".join(f for f in stack.split(";") if not f.endswith("_[i]"))] += int(n)
    assert merged == Counter({s: int(n) for s, _, n in (line.rpartition(" ") for line in plain[0].splitlines())})


def test_folders_agree_on_perf_scripts_inline_lines(inline_lab, tmp_path):
    """perf script --inline text (the "(inlined)" lines) folds the same in pmuprof-fold and in Python."""
    from pmuprof.model.perfscript import fold_lines

    _, _, script = _read(inline_lab, "dwarf", "--inline")
    (tmp_path / "s.txt").write_text(script)
    fold = native_binary("pmuprof-fold")
    leaves = tmp_path / "leaves"
    res = subprocess.run(
        [str(fold), "--leaves", str(leaves)],
        stdin=open(tmp_path / "s.txt"),
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ},
    )
    assert res.returncode == 0, res.stderr
    py = fold_lines(script.splitlines())
    c_stacks = Counter({s: int(n) for s, _, n in (line.rpartition(" ") for line in res.stdout.splitlines())})
    assert c_stacks == Counter({";".join(k): v for k, v in py.stacks.items()})
    assert any("_[i]" in s for s in c_stacks)
    c_leaves = {tuple(row.split("\t")[1:3]) for row in leaves.read_text().splitlines()}
    assert ("worker" in {sym for _, sym in c_leaves}) and not any(
        sym.endswith("_[i]") or sym == "spin_pause" for _, sym in c_leaves
    )

"""Function boundaries from .eh_frame on stripped binaries, and the PAUSE-function scan (also on mariadbd)."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from native_support import PROGS, compile_prog, elf_symbols, run_helper

MARIADBD = Path("/usr/sbin/mariadbd")


@pytest.fixture(scope="module")
def helper(decoding_helper):
    return decoding_helper


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(unstripped, stripped) copies of the placements program; symbols come from the unstripped one."""
    if not shutil.which("strip"):
        pytest.skip("strip (binutils) not installed")
    tmp = tmp_path_factory.mktemp("funcs")
    exe = compile_prog(PROGS / "placements.c", tmp / "pl", "gcc", "-O2")
    stripped = tmp / "pl-stripped"
    subprocess.run(["strip", "-o", str(stripped), str(exe)], check=True)
    return exe, stripped, elf_symbols(exe)


def test_addresses_map_to_fde_functions_without_symbols(helper, built):
    exe, stripped, syms = built
    labels = ("lp_after", "rn_after", "mf_after")
    rc, data = run_helper(
        helper, "funcs", "--binary", str(stripped), stdin="".join(f"0x{syms[lab][0]:x}\n" for lab in labels)
    )
    assert rc == 0 and data["symbols"] == "dynsym"
    assert data["fde_functions"] >= 6
    funcs = {"lp_after": "loop_pause", "rn_after": "rep_nop_spelling", "mf_after": "fences"}
    for label, row in zip(labels, data["addresses"]):
        start, size, _ = syms[funcs[label]]
        assert int(row["start"], 16) == start and int(row["end"], 16) == start + size, row
        assert row["name"] is None and row["source"] == "eh_frame"
        assert row["contains_pause"] == (label != "mf_after")


def test_file_offsets_and_names_when_symbols_exist(helper, built):
    exe, _, syms = built
    addr = syms["lp_after"][0]
    rc, data = run_helper(helper, "funcs", "--binary", str(exe), "--offsets", stdin=f"0x{addr:x}\n")
    assert rc == 0
    # PIE text is mapped at file offset == vaddr in the first segments gcc emits
    assert data["addresses"][0]["name"] == "loop_pause"


def test_functions_holding_pause_are_marked(helper, built):
    _, stripped, syms = built
    names = ("loop_pause", "pause_then_jump", "rep_nop_spelling", "fences", "locked", "serializing", "main")
    rc, data = run_helper(
        helper, "funcs", "--binary", str(stripped), stdin="".join(f"0x{syms[n][0]:x}\n" for n in names)
    )
    assert rc == 0
    marked = {name: entry["contains_pause"] for name, entry in zip(names, data["addresses"])}
    assert marked == {
        "loop_pause": True,
        "pause_then_jump": True,
        "rep_nop_spelling": True,
        "fences": False,
        "locked": False,
        "serializing": False,
        "main": False,
    }


@pytest.mark.skipif(not MARIADBD.is_file(), reason="mariadb-server not installed (/usr/sbin/mariadbd)")
def test_mariadbd_has_far_more_fde_functions_than_names(helper):
    from pmuprof.tools.elf import ElfFile

    found = ElfFile(MARIADBD).find("my_cpu_init")
    cpu_init = (found[0].value,) if found else None
    rc, data = run_helper(helper, "funcs", "--binary", str(MARIADBD), stdin=f"0x{cpu_init[0]:x}\n" if cpu_init else "")
    assert rc == 0 and data["symbols"] == "dynsym"
    assert data["fde_functions"] > 30000 and data["fde_functions"] > data["named_functions"]
    assert cpu_init and data["addresses"][0]["contains_pause"], "MariaDB's PAUSE calibration holds PAUSE"


def _file_offset(path: Path, vaddr: int) -> int:
    """The file offset of a virtual address, from the ELF's PT_LOAD headers."""
    data = path.read_bytes()
    (phoff,) = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for i in range(phnum):
        typ, _flags, off, va, _pa, filesz, _memsz, _align = struct.unpack_from("<IIQQQQQQ", data, phoff + i * phentsize)
        if typ == 1 and va <= vaddr < va + filesz:
            return vaddr - va + off
    raise AssertionError(f"{vaddr:#x} is in no PT_LOAD segment of {path}")


def test_cpp_names_read_as_perf_prints_them(helper, tmp_path):
    """The helper names a frame perf left unnamed: that name must be the one perf (and the perf.data
    reader) gives the same function elsewhere, without parameters, or rules and graphs see two functions."""
    from pmuprof.tools.native.symbolize import symbolize

    exe = compile_prog(PROGS / "pd_cpp.cpp", tmp_path / "pd_cpp", "g++", "-O1", ("-g",))
    funcs = {
        name: value
        for name, (value, size, typ) in elf_symbols(exe).items()
        if name.startswith("_Z") and typ == 2 and value and size
    }
    offsets = [_file_offset(exe, value) for value in funcs.values()]
    perf_names = symbolize([(os.getpid(), off, str(exe)) for off in offsets])
    if perf_names is None:
        pytest.skip("pmuprof-perfdata is not built (it needs libiberty)")
    rc, data = run_helper(
        helper, "funcs", "--binary", str(exe), "--offsets", stdin="".join(f"0x{off:x}\n" for off in offsets)
    )
    assert rc == 0
    pairs = {
        (entry["display"], name)
        for entry, (name, _) in zip(data["addresses"], perf_names)
        if entry.get("symbol") in funcs
    }
    assert len(pairs) >= 10
    assert {display for display, name in pairs if display != name} == set()
    assert "pd::engine::op" in {display for display, _ in pairs}

"""Shared helpers for native tests: build the helper, compile test programs, read ELF symbols without nm."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from shared import native_make

REPO = Path(__file__).resolve().parents[2]
PROGS = Path(__file__).resolve().parent / "progs"
HELPER = REPO / "native" / "build" / "pmuprof-helper"


def native_binary(name: str) -> Path:
    """Build (or refresh) native/build/NAME; skip without a compiler, FAIL when the sources do not build."""
    path = REPO / "native" / "build" / name
    if not shutil.which("make") or not shutil.which("gcc"):
        pytest.skip(f"make/gcc not installed: cannot build {name} (apt-get install build-essential)")
    with native_make():  # one make at a time in native/ (xdist workers, tiers)
        res = subprocess.run(["make", "-C", str(REPO / "native"), f"build/{name}"], capture_output=True, text=True)
    if res.returncode != 0 or not path.is_file():
        pytest.fail(f"{name} did not build: {res.stderr.strip()[-600:]}")
    return path


def helper_binary() -> Path:
    """Build (or refresh) native/build/pmuprof-helper; skip when it cannot be built here."""
    return native_binary("pmuprof-helper")


def helper_features(helper: Path) -> dict[str, bool]:
    data = json.loads(subprocess.run([str(helper), "features"], capture_output=True, text=True, check=True).stdout)
    return {k: v["on"] for k, v in data["features"].items()}


# pkg-config / link probes as native/Makefile makes them: a library present here must be compiled in.
_PROBES = {
    "libpfm4": [
        "sh",
        "-c",
        "printf '#include <perfmon/pfmlib.h>\\nint main(void){return pfm_initialize();}\\n'"
        " | gcc -x c - -lpfm -o /dev/null",
    ],
    "elfutils": ["pkg-config", "--exists", "libdw", "libelf"],
    "capstone": ["pkg-config", "--exists", "capstone"],
}


def need_features(helper: Path, *names: str) -> None:
    """Skip when a library is not installed here; fail when it is installed but the helper lacks it."""
    feats = helper_features(helper)
    for name in names:
        if feats.get(name):
            continue
        installed = subprocess.run(_PROBES[name], capture_output=True).returncode == 0
        if installed:
            pytest.fail(f"{name} is installed but pmuprof-helper was built without it: a broken build (make -C native)")
        pytest.skip(f"pmuprof-helper was built without {name} (install its -dev package, make -C native)")


def run_helper(helper: Path, *args: str, stdin: str = "", env: dict | None = None) -> tuple[int, dict]:
    res = subprocess.run(
        [str(helper), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )
    return res.returncode, json.loads(res.stdout)


def compile_prog(src: Path, out: Path, compiler: str, opt: str, extra: tuple[str, ...] = ()) -> Path:
    if not shutil.which(compiler):
        pytest.skip(f"{compiler} is not installed")
    subprocess.run([compiler, opt, *extra, "-o", str(out), str(src)], check=True, capture_output=True)
    return out


def build_over_nofp_lib(prog: str, tmp: Path) -> Path:
    """progs/PROG.c built with frame pointers against progs/nofp_lib.c built without them, as Debian builds
    glibc (libnofp.so beside it, found by rpath); the executable's path."""
    lib, exe = tmp / "libnofp.so", tmp / prog
    subprocess.run(
        ["gcc", "-O2", "-fomit-frame-pointer", "-fPIC", "-shared", "-o", str(lib), str(PROGS / "nofp_lib.c")],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [
            "gcc",
            "-O1",
            "-g",
            "-fno-omit-frame-pointer",
            "-pthread",
            "-o",
            str(exe),
            str(PROGS / f"{prog}.c"),
            f"-L{tmp}",
            "-lnofp",
            f"-Wl,-rpath,{tmp}",
        ],
        check=True,
        capture_output=True,
    )
    return exe


def elf_symbols(path: Path) -> dict[str, tuple[int, int, int]]:
    """name -> (value, size, type) from .symtab: an independent reading of the ground truth (no nm)."""
    data = path.read_bytes()
    assert data[:4] == b"\x7fELF" and data[4] == 2, "ELF64 expected"
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    out: dict[str, tuple[int, int, int]] = {}
    for sec in sections:
        if sec[1] != 2:  # SHT_SYMTAB
            continue
        strtab = sections[sec[6]]
        for off in range(sec[4], sec[4] + sec[5], sec[9]):
            name_off, info, _other, _shndx, value, size = struct.unpack_from("<IBBHQQ", data, off)
            end = data.index(b"\0", strtab[4] + name_off)
            name = data[strtab[4] + name_off : end].decode()
            if name:
                out[name] = (value, size, info & 0xF)
    return out


def containing_function(syms: dict[str, tuple[int, int, int]], addr: int) -> tuple[str, int]:
    """(function name, its start) for a code address, from STT_FUNC symbols."""
    for name, (value, size, typ) in syms.items():
        if typ == 2 and value <= addr < value + size:
            return name, value
    raise AssertionError(f"no function holds 0x{addr:x}")

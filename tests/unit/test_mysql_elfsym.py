"""Reading a global from a live process at its .dynsym address, on binaries compiled here (PIE and not)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pmuprof.capture.mysql.procsym import find_symbol_in_file, load_base, read_process_symbol

SOURCE = r"""
#include <unistd.h>
unsigned int my_cpu_relax_multiplier = 123;
unsigned long long other_value = 0x1122334455667788ULL;
int main(void) { write(1, "ready\n", 6); pause(); return (int)my_cpu_relax_multiplier; }
"""


@pytest.fixture(scope="module", params=["pie", "no-pie"])
def program(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("gcc not installed")
    folder = tmp_path_factory.mktemp(request.param)
    (folder / "p.c").write_text(SOURCE)
    flags = ["-fPIE", "-pie"] if request.param == "pie" else ["-fno-pie", "-no-pie"]
    subprocess.run(["gcc", "-O1", "-rdynamic", *flags, "-o", str(folder / "p"), str(folder / "p.c")], check=True)
    return folder / "p"


def test_symbol_found_in_dynsym(program: Path) -> None:
    sym = find_symbol_in_file(program, "my_cpu_relax_multiplier")
    assert sym is not None and sym.section == ".dynsym" and sym.size == 4
    assert find_symbol_in_file(program, "no_such_symbol_here") is None


def test_read_from_running_process(program: Path) -> None:
    proc = subprocess.Popen([str(program)], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        assert read_process_symbol(proc.pid, "my_cpu_relax_multiplier") == 123
        assert read_process_symbol(proc.pid, "other_value") == 0x1122334455667788
        with pytest.raises(LookupError):
            read_process_symbol(proc.pid, "no_such_symbol_here")
    finally:
        proc.kill()
        proc.wait()


def test_not_elf(tmp_path: Path) -> None:
    (tmp_path / "x").write_bytes(b"#!/bin/sh\n" * 10)
    with pytest.raises(ValueError):
        find_symbol_in_file(tmp_path / "x", "x")


def test_load_base_from_maps() -> None:
    maps = (
        "55da386e9000-55da38d6b000 r--p 00000000 fe:00 10706946 /usr/sbin/mariadbd\n"
        "55da38d6b000-55da3969c000 r-xp 00682000 fe:00 10706946 /usr/sbin/mariadbd\n"
        "7f0000000000-7f0000001000 r--p 00000000 fe:00 99 /lib/x.so\n"
    )
    assert load_base(maps, 10706946, 0) == 0x55DA386E9000
    assert load_base(maps, 12345, 0) is None

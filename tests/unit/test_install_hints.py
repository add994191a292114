"""Install hints come from one table (pmuprof/packages.py); the C side's copies agree with it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pmuprof.packages import NATIVE, PACKAGES, apt_install, packages
from pmuprof.tools.native import helper

REPO = Path(__file__).resolve().parents[2]
NATIVE_DIR = REPO / "native"
# What a hint in native/ is about, by the first of these words on its line: program names first.
NATIVE_HINTS = {"pmuprof-perfdata": ("elfutils", "libiberty"), "pmuprof-offcpu": ("bpf", "elfutils"),
                "libpfm4": ("libpfm4",), "elfutils": ("elfutils",), "capstone": ("capstone",)}
_APT = re.compile(r"apt-get install ([a-z0-9][a-z0-9 .+-]*[a-z0-9])")


def test_python_spells_no_package_list_but_the_table():
    sources = [p for p in (REPO / "pmuprof").rglob("*.py") if p.name != "packages.py"] + [REPO / "setup.py"]
    spelled = [f"{p.relative_to(REPO)}:{n}" for p in sources
               for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if _APT.search(line)]
    assert spelled == [], "use pmuprof.packages.apt_install instead of spelling packages"


def _native_hints() -> list[tuple[str, str, str]]:
    """(where, what it is about, packages) for every apt-get hint in native/."""
    found = []
    for path in sorted([NATIVE_DIR / "Makefile", *NATIVE_DIR.rglob("*.c"), *NATIVE_DIR.rglob("*.h")]):
        text = path.read_text(encoding="utf-8")
        for call in re.finditer(r'feature\(out, "(\w+)".*?\);', text, re.S):  # features.c: name, then its fix
            for apt in _APT.finditer(call.group(0)):
                found.append((f"{path.name}:{text.count(chr(10), 0, call.start() + apt.start()) + 1}", call.group(1), apt.group(1)))
        for n, line in enumerate(text.splitlines(), 1):
            apt = _APT.search(line)
            if apt and not any(where == f"{path.name}:{n}" for where, _, _ in found):
                about = next((word for word in NATIVE_HINTS if word in line), "")
                found.append((f"{path.name}:{n}", about, apt.group(1)))
    return found


def test_native_hints_name_the_tables_packages():
    hints = _native_hints()
    assert len(hints) >= 8  # the Makefile's five and features.c's three
    for where, about, spelled in hints:
        assert about in NATIVE_HINTS, f"{where}: a hint about nothing the table knows: {spelled}"
        assert tuple(spelled.split()) == packages(*NATIVE_HINTS[about]), f"{where}: {spelled}"


def test_every_helper_feature_has_its_packages():
    needed = {name for names in helper.NEEDS.values() for name in names}
    assert needed <= set(PACKAGES) and set(helper.FEATURE_FIX) <= set(PACKAGES)


@pytest.mark.parametrize("features, text", [
    (("perf",), "apt-get install linux-perf"),
    (("elfutils", "capstone"), "apt-get install pkg-config libdw-dev libelf-dev libcapstone-dev"),
])
def test_apt_install_names_each_package_once(features, text):
    assert apt_install(*features) == text


def test_native_is_every_package_but_perf_and_debuginfod():
    assert set(packages(*NATIVE)) == set(packages(*PACKAGES)) - {"linux-perf", "debuginfod"}

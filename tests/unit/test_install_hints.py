"""Install hints come from one table (pmuprof/packages.py); the C side's copies agree with it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import os
import subprocess
import sys

from pmuprof.packages import BUILD_HOST, DATABASE_HOST, NATIVE, PACKAGES, RUNTIME, apt_install, packages
from pmuprof.tools.native import helper

REPO = Path(__file__).resolve().parents[2]
NATIVE_DIR = REPO / "native"
# What a hint in native/ is about, by the first of these words on its line: program names first.
NATIVE_HINTS = {
    "pmuprof-perfdata": ("elfutils", "libiberty"),
    "pmuprof-offcpu": ("bpf", "elfutils"),
    "libpfm4": ("libpfm4",),
    "elfutils": ("elfutils",),
    "capstone": ("capstone",),
}
_APT = re.compile(r"apt-get install ([a-z0-9][a-z0-9 .+-]*[a-z0-9])")


def test_python_spells_no_package_list_but_the_table():
    sources = [p for p in (REPO / "pmuprof").rglob("*.py") if p.name != "packages.py"] + [REPO / "setup.py"]
    spelled = [
        f"{p.relative_to(REPO)}:{n}"
        for p in sources
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if _APT.search(line)
    ]
    assert spelled == [], "use pmuprof.packages.apt_install instead of spelling packages"


def _native_hints() -> list[tuple[str, str, str]]:
    """(where, what it is about, packages) for every apt-get hint in native/."""
    found = []
    for path in sorted([NATIVE_DIR / "Makefile", *NATIVE_DIR.rglob("*.c"), *NATIVE_DIR.rglob("*.h")]):
        text = path.read_text(encoding="utf-8")
        for call in re.finditer(r'feature\(out, "(\w+)".*?\);', text, re.S):  # features.c: name, then its fix
            for apt in _APT.finditer(call.group(0)):
                found.append(
                    (
                        f"{path.name}:{text.count(chr(10), 0, call.start() + apt.start()) + 1}",
                        call.group(1),
                        apt.group(1),
                    )
                )
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


@pytest.mark.parametrize(
    "features, text",
    [
        (("perf",), "apt-get install linux-perf"),
        (("elfutils", "capstone"), "apt-get install pkg-config libdw-dev libelf-dev libcapstone-dev"),
    ],
)
def test_apt_install_names_each_package_once(features, text):
    assert apt_install(*features) == text


def test_native_is_every_package_but_perf_and_debuginfod():
    assert set(packages(*NATIVE)) == set(packages(*PACKAGES)) - {"linux-perf", "debuginfod"}


def _readme_apt_lines() -> list[tuple[str, ...]]:
    """The packages of each `apt-get install` command in README's production section, continuations joined."""
    text = (REPO / "README.md").read_text(encoding="utf-8").replace("\\\n", " ")
    section = text.split("### Production install", 1)[1].split("\n## ", 1)[0]
    return [
        tuple(w for w in m.group(1).split() if not w.startswith("-"))
        for m in re.finditer(r"^apt-get install (.*)$", section, re.M)
    ]


def test_readme_production_lines_are_the_tables():
    assert _readme_apt_lines() == [BUILD_HOST, DATABASE_HOST]


def test_runtime_table_covers_every_build_feature():
    assert set(RUNTIME) == set(PACKAGES)
    assert not any(p.endswith("-dev") for p in DATABASE_HOST)
    assert {"libbpf-dev", "clang", "libiberty-dev"} <= set(BUILD_HOST) and "libbpf1" in DATABASE_HOST


def test_openblas_is_bounded_before_numpy_loads():
    """Importing pmuprof's numpy users starts no OpenBLAS pool; plain numpy does on a multi-CPU host."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    probe = "import {}; print(open('/proc/self/status').read().split('Threads:')[1].split()[0])"
    threads = {
        mod: int(
            subprocess.run(
                [sys.executable, "-c", probe.format(mod)], env=env, cwd=REPO, capture_output=True, text=True, check=True
            ).stdout
        )
        for mod in ("pmuprof.model.stacks", "numpy")
    }
    assert threads["pmuprof.model.stacks"] == 1
    if (os.cpu_count() or 1) > 1:  # the control: without the setting this host's OpenBLAS starts threads
        assert threads["numpy"] > 1, threads


def test_readme_extras_lines_print_the_man_page_and_the_completion():
    """pipx < 1.5 installs no man page: the README's two lines write it and the completion script."""
    section = (REPO / "README.md").read_text(encoding="utf-8").split("### Production install", 1)[1]
    assert "pmuprof man > /usr/local/share/man/man1/pmuprof.1" in section
    assert "_PMUPROF_COMPLETE=bash_source pmuprof > /usr/local/share/bash-completion/completions/pmuprof" in section
    env = {**os.environ, "_PMUPROF_COMPLETE": "bash_source"}
    script = subprocess.run(
        [sys.executable, "-m", "pmuprof"], env=env, cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert script.returncode == 0 and "_pmuprof_completion()" in script.stdout and "complete " in script.stdout

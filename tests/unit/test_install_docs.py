"""The install docs and what carries them out agree: every install command of README.md and docs/install.md is
run as written by a clean-root test (tests/install), docs/install.md's package lists are bootstrap.sh's, and
debian/'s dependencies are pyproject.toml's."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from install.doccmds import RUN_BY, blocks
from pmuprof import __version__
from pmuprof.packages import NATIVE, packages

REPO = Path(__file__).resolve().parents[2]
BUILD_ESSENTIAL = {"gcc", "make", "libc6-dev"}  # what build-essential brings: debian/control does not list them
# pyproject's distribution name -> Debian 12's package of it
DEBIAN_NAMES = {
    "click": "python3-click",
    "jinja2": "python3-jinja2",
    "pyyaml": "python3-yaml",
    "pymysql": "python3-pymysql",
    "numpy": "python3-numpy",
}


def test_every_install_block_is_run_by_a_clean_root_test():
    found = {b.key for b in blocks()}
    assert found == set(RUN_BY), f"blocks without a test: {found - set(RUN_BY)}; gone: {set(RUN_BY) - found}"
    for key, where in RUN_BY.items():
        module, func = where.split("::")
        tree = ast.parse((REPO / "tests" / "install" / module).read_text(encoding="utf-8"))
        assert func in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}, (key, where)


def test_every_block_is_a_command_list():
    for b in blocks():
        assert b.commands and all(not line.startswith("$ ") for line in b.commands), b.key


def _bootstrap_lists() -> tuple[set[str], set[str]]:
    text = (REPO / "bootstrap.sh").read_text(encoding="utf-8").replace("\\\n", " ")
    base = re.search(r'^APT_PACKAGES="([^"$]*)"', text, re.M).group(1).split()
    test = re.search(r'APT_PACKAGES="\$APT_PACKAGES ([^"]*)"', text).group(1).split()
    return set(base), set(test)


def test_install_md_lists_bootstrap_packages():
    section = (REPO / "docs" / "install.md").read_text(encoding="utf-8").split("## A test box", 1)[1]
    section = section.split("\n## ", 1)[0]
    spans = [set(m.group(1).split()) for m in re.finditer(r"`([a-z0-9][a-z0-9 .+-]+)`", section.replace("\n", " "))]
    lists = [s for s in spans if len(s) >= 4]  # package lists, not `mvn` or `native/`
    base, test = _bootstrap_lists()
    assert lists[0] | lists[1] | {"linux-perf", "python3-pip", "python3-venv"} == base  # perf, pip and venv in words
    assert lists[2] == test
    assert "maven" in section  # added only when `mvn` is missing


def _control() -> dict[str, str]:
    """debian/control's fields (both paragraphs), continuation lines joined."""
    fields: dict[str, str] = {}
    key = ""
    for line in (REPO / "debian" / "control").read_text(encoding="utf-8").splitlines():
        if line[:1].isspace() and key:
            fields[key] += " " + line.strip()
        elif ":" in line:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return fields


def _relations(text: str) -> dict[str, str]:
    """'a (>= 1), b' -> {'a': '>= 1', 'b': ''}."""
    out = {}
    for item in text.split(","):
        m = re.match(r"\s*([A-Za-z0-9.+${}:-]+)\s*(?:\(([^)]*)\))?", item)
        if m and m.group(1):
            out[m.group(1)] = (m.group(2) or "").strip()
    return out


def test_deb_depends_are_pyprojects_dependencies():
    """Each runtime dependency is Debian's package of it, with pyproject's lower bound (numpy's epoch 1:)."""
    listed = re.search(r"^dependencies = \[(.*)\]$", (REPO / "pyproject.toml").read_text(encoding="utf-8"), re.M)
    wanted = {}
    for dep in ast.literal_eval(f"[{listed.group(1)}]"):  # tomllib is 3.11+, pmuprof runs on 3.10
        name, bound = re.match(r"([A-Za-z0-9_.-]+)>=([0-9.]+)$", dep).groups()
        debian = DEBIAN_NAMES[name.lower()]
        wanted[debian] = f">= {'1:' if debian == 'python3-numpy' else ''}{bound}"
    depends = _relations(_control()["Depends"])
    assert {k: v for k, v in depends.items() if k.startswith("python3-")} == wanted
    assert {"${shlibs:Depends}", "${python3:Depends}", "linux-perf"} <= set(depends)


def test_deb_builds_with_every_native_package_and_the_python_it_runs():
    build = set(_relations(_control()["Build-Depends"]))
    assert set(packages(*NATIVE)) - BUILD_ESSENTIAL <= build
    assert set(DEBIAN_NAMES.values()) <= build  # the build runs pmuprof (completion, units) with them


def test_deb_version_and_doc_names_are_this_version():
    first = (REPO / "debian" / "changelog").read_text(encoding="utf-8").splitlines()[0]
    assert re.match(rf"^pmuprof \({re.escape(__version__)}\) ", first), first
    text = "\n".join(b.text for b in blocks())
    assert f"pmuprof_{__version__}_amd64.deb" in text and f"pmuprof-{__version__}-py3-none-linux_" in text
    assert f"pmuprof-{__version__}.tar.gz" in text

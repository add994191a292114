"""The install commands of README.md and docs/install.md, read from the docs themselves: the clean-root tier
runs them as written, so the docs and the tests cannot drift apart."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# Where install commands live: a file, and the heading whose section (sub-sections included) holds them.
INSTALL_DOCS = (("README.md", "Install and run: two commands"), ("docs/install.md", ""))
_FENCE = re.compile(r"^```sh\n(.*?)^```", re.S | re.M)
_HEADING = re.compile(r"^(#+) (.+)$", re.M)


@dataclass(frozen=True)
class Block:
    """One ```sh block: its file, the heading it sits under, its place among that heading's blocks."""

    file: str
    heading: str
    index: int
    text: str

    @property
    def key(self) -> str:
        return f"{self.file}#{self.heading}#{self.index}"

    @property
    def commands(self) -> list[str]:
        """Its command lines, continuations joined, comments and blank lines left in the text given to sh."""
        joined = self.text.replace("\\\n", " ")
        return [line for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]

    def script(self) -> str:
        """The block as sh runs it: every line as written, stopping at the first that fails (sh -e)."""
        return self.text


def _section(text: str, heading: str) -> str:
    """The part of ``text`` under ``heading`` down to the next heading of the same or a higher level."""
    if not heading:
        return text
    match = next(m for m in _HEADING.finditer(text) if m.group(2).strip() == heading)
    level = len(match.group(1))
    rest = text[match.end() :]
    end = next((m.start() for m in _HEADING.finditer(rest) if len(m.group(1)) <= level), len(rest))
    return text[match.start() : match.end() + end]


def blocks() -> list[Block]:
    """Every sh block of the install docs, in order."""
    out: list[Block] = []
    for file, heading in INSTALL_DOCS:
        section = _section((REPO / file).read_text(encoding="utf-8"), heading)
        seen: dict[str, int] = {}
        for fence in _FENCE.finditer(section):
            above = [m.group(2).strip() for m in _HEADING.finditer(section[: fence.start()])]
            under = above[-1] if above else heading
            out.append(Block(file, under, seen.get(under, 0), fence.group(1)))
            seen[under] = seen.get(under, 0) + 1
    return out


def block(file: str, heading: str, index: int = 0) -> Block:
    found = [b for b in blocks() if (b.file, b.heading, b.index) == (file, heading, index)]
    assert found, f"no sh block {index} under {heading!r} in {file}: the docs changed, change the test too"
    return found[0]


# Which clean-root test runs each block as written (tests/unit/test_install_docs.py holds this table to the
# docs: a block added to the docs without a test that runs it fails there).
RUN_BY = {
    "README.md#Install and run: two commands#0": "test_bootstrap.py::test_the_readme_two_commands",
    "README.md#Production install (a database host)#0": "test_packages.py::test_build_host_makes_the_wheel",
    "README.md#Production install (a database host)#1": "test_packages.py::test_database_host_installs_the_wheel",
    "README.md#Production install (a database host)#2": "test_packages.py::test_database_host_venv_instead_of_pipx",
    "docs/install.md#A database host: the wheel and its runtime libraries#0": "test_packages.py::test_build_host_makes_the_sdist",
    "docs/install.md#A database host: the wheel and its runtime libraries#1": "test_packages.py::test_the_sdist_installs_and_captures",
    "docs/install.md#A Debian package#0": "test_packages.py::test_build_host_makes_the_deb",
    "docs/install.md#A Debian package#1": "test_packages.py::test_the_deb_installs_and_captures",
}

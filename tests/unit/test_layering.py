"""Modules import only downwards: the layers table of docs/internals.md, checked on every import."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "pmuprof"
INTERNALS = REPO / "docs" / "internals.md"

# Two files the table does not name: pmuprof/__init__.py holds only __version__ (read by every
# layer) and the OpenBLAS thread bound, and __main__ runs the CLI, so it sits above everything.
EXTRA = {"__init__": 0, "__main__": 99}


def doc_layers(text: str) -> dict[str, int]:
    """The layers table of internals.md: first part of a module name -> its layer."""
    layers: dict[str, int] = {}
    table = text.split("| layer | package | job |", 1)[1].split("\n\n", 1)[0]
    for line in table.splitlines():
        row = re.match(r"\|\s*(\d+)\s*\|([^|]*)\|", line)
        if row:
            for name in re.findall(r"`([^`]+)`", row.group(2)):
                layers[name.removesuffix("/").removesuffix(".py")] = int(row.group(1))
    return layers


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def imported(node: ast.AST, path: Path, root: Path) -> list[str]:
    """Names of pmuprof modules an import statement reads (relative imports resolved)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        package = list(path.relative_to(root.parent).parent.parts)
        package = package[: len(package) - node.level + 1]
        base = ".".join(package + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    names = []
    for alias in node.names:  # `from pkg import module` reads that module; `from mod import name`, mod
        sub = base + "." + alias.name
        is_module = (root.parent / sub.replace(".", "/")).with_suffix(".py").is_file() or (
            root.parent / sub.replace(".", "/")
        ).is_dir()
        names.append(sub if is_module else base)
    return names


def layer_of(module: str, layers: dict[str, int]) -> int | None:
    parts = module.split(".")
    return layers.get(parts[1] if len(parts) > 1 else "__init__")


def violations(root: Path, layers: dict[str, int]) -> list[str]:
    """file:line for every import of a higher layer, or of a module the table does not place."""
    found = []
    for path in sorted(root.rglob("*.py")):
        here = module_name(path, root)
        mine = layer_of(here, layers)
        if mine is None:
            found.append(f"{path.relative_to(root.parent)}:1: {here} is in no layer of the table")
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            for target in imported(node, path, root):
                if target.split(".")[0] != root.name:
                    continue
                theirs = layer_of(target, layers)
                if theirs is None or theirs > mine:
                    found.append(
                        f"{path.relative_to(root.parent)}:{node.lineno}: {here} (layer {mine}) "
                        f"imports {target} (layer {theirs})"
                    )
    return found


def test_the_table_places_every_part_of_the_package():
    layers = doc_layers(INTERNALS.read_text(encoding="utf-8"))
    parts = {p.stem for p in PACKAGE.glob("*.py")} | {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert sorted(parts - set(layers) - set(EXTRA)) == []
    assert sorted(set(layers) - parts) == [], "internals.md names a package that does not exist"


# Folder names tools treat as build output (skipped by tree drawers, search and .gitignore habits): a
# package folder so named hides source from whoever reads the tree.
BUILD_OUTPUT_NAMES = {"build", "dist", "target", "out", "output", "obj", "tmp"}


def test_no_package_folder_is_named_like_build_output():
    named = sorted(str(p.relative_to(REPO)) for p in PACKAGE.rglob("*") if p.is_dir() and p.name in BUILD_OUTPUT_NAMES)
    assert named == [], "rename these folders: tools skip them as build output"


def test_the_folders_the_table_names_exist():
    """Each `folder/` in a layer's job column is a folder of that layer's package, or a package of its own
    (the names the table gives stay true through a rename)."""
    text = INTERNALS.read_text(encoding="utf-8")
    table = text.split("| layer | package | job |", 1)[1].split("\n\n", 1)[0]
    named, missing = [], []
    for line in table.splitlines():
        row = re.match(r"\|\s*\d+\s*\|\s*`([a-z_]+)/`\s*\|([^|]*)\|", line)
        for folder in re.findall(r"`([a-z_]+)/`", row.group(2)) if row else ():
            named.append(f"{row.group(1)}/{folder}/")
            if not (PACKAGE / row.group(1) / folder).is_dir() and not (PACKAGE / folder).is_dir():
                missing.append(named[-1])
    assert "capture/proc/" in named and missing == [], f"internals.md's layers table names no such folder: {missing}"


def test_modules_import_only_downwards():
    layers = {**doc_layers(INTERNALS.read_text(encoding="utf-8")), **EXTRA}
    found = violations(PACKAGE, layers)
    assert not found, "imports of a higher layer (docs/internals.md):\n" + "\n".join(found)


@pytest.mark.parametrize(
    "where, line, source",
    [
        ("model/bad.py", 3, '"""x"""\n\nfrom ..report.html import render_report\n'),
        ("model/bad.py", 2, "def f():\n    from pmuprof.cli import main\n"),
        ("tools/bad.py", 1, "import pmuprof.capture.record\n"),
        ("findings/bad.py", 1, "from .. import pipeline\n"),
    ],
)
def test_an_upward_import_is_named_with_file_and_line(tmp_path, where, line, source):
    root = tmp_path / "pmuprof"
    for package in ("model", "tools", "capture", "findings", "report", "cli"):
        (root / package).mkdir(parents=True)
        (root / package / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "pipeline.py").write_text("")
    (root / "capture" / "record.py").write_text("")
    (root / "report" / "html.py").write_text("")
    (root / where).write_text(source)
    layers = {**doc_layers(INTERNALS.read_text(encoding="utf-8")), **EXTRA}
    found = violations(root, layers)
    assert len(found) == 1 and found[0].startswith(f"pmuprof/{where}:{line}: "), found


def test_the_report_renders_what_the_analyse_stage_joined():
    """report/ may import findings/ and model/, never analysis/: the joins it shows (thread and processlist
    tables) are done in the analyse stage and reach it through the Profile."""
    found = []
    for path in sorted((PACKAGE / "report").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            found += [
                f"{path.relative_to(REPO)}:{node.lineno}: {t}"
                for t in imported(node, path, PACKAGE)
                if t.startswith("pmuprof.analysis")
            ]
    assert not found, "\n".join(found)

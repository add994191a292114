"""Packaging: PEP 621 metadata and license in the built wheel, and a wheel tag that tells the truth about
the ELF helpers inside (py3-none-linux_<arch> with them, py3-none-any without)."""

from __future__ import annotations

import email
import sysconfig
import zipfile
from pathlib import Path

import pytest

from helpers import REPO
from shared import wheel

HELPERS = ("pmuprof/bin/pmuprof-helper", "pmuprof/bin/pmuprof-fold")


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> dict[str, Path]:
    """The run's two wheels of this checkout (tests/shared.py builds each once)."""
    return {"native": wheel(tmp_path_factory, native=True), "pure": wheel(tmp_path_factory, native=False)}


def _wheel_meta(path: Path) -> tuple[list[str], email.message.Message, str]:
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
        wheel = next(n for n in names if n.endswith(".dist-info/WHEEL"))
        return names, email.message_from_bytes(zf.read(meta)), zf.read(wheel).decode()


def test_native_wheel_is_a_platform_wheel_with_its_helpers(wheels):
    names, _, wheel = _wheel_meta(wheels["native"])
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    if not all(h in names for h in HELPERS):
        pytest.skip("the helpers did not build here (no gcc or -dev packages): see test below for the pure wheel")
    assert wheels["native"].name.endswith(f"-py3-none-{plat}.whl") and f"Tag: py3-none-{plat}" in wheel
    assert "Root-Is-Purelib: false" in wheel
    with zipfile.ZipFile(wheels["native"]) as zf:
        for helper in HELPERS:
            assert zf.read(helper)[:4] == b"\x7fELF"
            assert (zf.getinfo(helper).external_attr >> 16) & 0o111, f"{helper} lost its exec bit"


def test_pure_wheel_has_no_elf_file_and_says_any(wheels):
    names, _, wheel = _wheel_meta(wheels["pure"])
    assert wheels["pure"].name.endswith("-py3-none-any.whl") and "Tag: py3-none-any" in wheel
    assert not any(n.startswith("pmuprof/bin/") for n in names)
    with zipfile.ZipFile(wheels["pure"]) as zf:
        assert not any(zf.read(n)[:4] == b"\x7fELF" for n in names if not n.endswith((".py", ".yaml", ".j2")))


def test_metadata_license_entry_point_and_resources(wheels):
    names, meta, _ = _wheel_meta(wheels["pure"])
    assert meta["Name"] == "pmuprof" and meta["License-Expression"] == "MIT"
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    classifiers = meta.get_all("Classifier")
    assert "Operating System :: POSIX :: Linux" in classifiers and "Topic :: Database" in classifiers
    requires = meta.get_all("Requires-Dist")
    assert {r.split(">")[0] for r in requires if "extra" not in r} == {"click", "Jinja2", "PyYAML", "PyMySQL", "numpy"}
    assert meta.get_all("Provides-Extra") == ["test"]
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    with zipfile.ZipFile(wheels["pure"]) as zf:
        assert "pmuprof = pmuprof.cli.main:main" in zf.read(entry).decode()
    for resource in (
        "pmuprof/templates/report.html.j2",
        "pmuprof/rules/innodb-spin-wait.yaml",
        "pmuprof/demo/pmuprof_demo.c",
    ):
        assert resource in names, resource
    assert any(n.endswith(".data/data/share/man/man1/pmuprof.1") for n in names)


def test_license_is_permissive_and_names_itself():
    text = (REPO / "LICENSE").read_text()
    assert text.startswith("MIT License") and "Permission is hereby granted, free of charge" in text

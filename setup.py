"""Build hook of pmuprof: compile the optional native helpers and tag the wheel by what it holds.

The metadata is in pyproject.toml. The helpers (pmuprof-helper, pmuprof-fold) are ELF files linked
to this host's libpfm4 / libdw / capstone, so a wheel that carries them is tagged
py3-none-linux_<arch> (not py3-none-any): it installs only on that architecture and needs the same
runtime libraries (libpfm4, libdw1, libcapstone4, libbpf1 on Debian 12).

PMUPROF_BUILD_NATIVE says what a build must hold: unset or 1, every helper with every feature, else
the build stops and says which helper or feature is missing and which packages add it (pip shows a
backend's output only when it fails, so a warning would be hidden); "optional", what this host can
build, with the same lines as a warning; 0, no helper (a py3-none-any wheel).
"""

import os
import re
import runpy
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

try:  # setuptools >= 70.1 ships bdist_wheel; older ones use the wheel package's
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # pragma: no cover - depends on the build environment
    from wheel.bdist_wheel import bdist_wheel

HERE = Path(__file__).resolve().parent
HELPERS = ("pmuprof-helper", "pmuprof-fold", "pmuprof-perfdata", "pmuprof-offcpu")
_HINTS = runpy.run_path(str(HERE / "pmuprof" / "packages.py"))  # the install-hint table, without importing pmuprof
HELPER_HINT = _HINTS["apt_install"](*_HINTS["NATIVE"])


def _native_mode() -> str:
    """'all' (the default), 'optional' or 'none', from PMUPROF_BUILD_NATIVE."""
    value = os.environ.get("PMUPROF_BUILD_NATIVE", "1").strip().lower()
    if value in ("0", "no", "false", "none"):
        return "none"
    return "optional" if value == "optional" else "all"


def _shortfalls(make: subprocess.CompletedProcess, built: Path) -> list[str]:
    """One line per helper not built or built with a feature off: the Makefile's reasons, else make's error."""
    said = [line for line in make.stdout.splitlines() if re.match(r"pmuprof-[a-z]+: .*apt-get install", line)]
    lines = said + [
        f"{name}: not built"
        for name in HELPERS
        if not (built / name).is_file() and not any(line.startswith(name + ":") for line in said)
    ]
    if make.returncode != 0:
        lines += ["make failed:"] + [f"  {line}" for line in make.stderr.strip().splitlines()[-8:]]
    return lines


class BuildWithHelper(build_py):
    """Also build native/ into pmuprof/bin; without its libraries, install without it and say why."""

    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "pmuprof" / "bin"
        shutil.rmtree(target, ignore_errors=True)  # never ship helpers left in build/ by an earlier build
        mode = _native_mode()
        if mode == "none":
            sys.stderr.write("pmuprof: PMUPROF_BUILD_NATIVE=0: building a pure-Python package without helpers\n")
            return
        try:  # -k: one helper that cannot build does not keep the others out
            make = subprocess.run(["make", "-k", "-C", str(HERE / "native")], capture_output=True, text=True)
        except OSError as err:
            make = subprocess.CompletedProcess(["make"], 127, "", f"make: {err.strerror}")
        sys.stdout.write(make.stdout)
        short = _shortfalls(make, HERE / "native" / "build")
        if short:
            text = "".join(f"pmuprof: {line}\n" for line in short) + (
                f"pmuprof: every helper and feature: {HELPER_HINT}\n"
                "pmuprof: or PMUPROF_BUILD_NATIVE=optional to build what this host can (doctor lists what is off),"
                " PMUPROF_BUILD_NATIVE=0 for no helper\n"
            )
            if mode == "all":
                raise SystemExit("pmuprof: the native helpers did not all build:\n" + text)
            sys.stderr.write(text)
        for name in HELPERS:
            built = HERE / "native" / "build" / name
            if built.is_file():
                target.mkdir(parents=True, exist_ok=True)
                shutil.copy2(built, target / name)


class TruthfulWheel(bdist_wheel):
    """py3-none-any when the wheel holds no ELF file, py3-none-linux_<arch> when it holds the helpers."""

    def run(self) -> None:
        self.run_command("build")
        build_lib = Path(self.get_finalized_command("build_py").build_lib)
        self.root_is_pure = not any((build_lib / "pmuprof" / "bin" / name).is_file() for name in HELPERS)
        if not self.root_is_pure:  # install into platlib, the wheel's root for a platform wheel
            self.distribution.has_ext_modules = lambda: True
        super().run()

    def get_tag(self) -> tuple[str, str, str]:
        if self.root_is_pure:
            return "py3", "none", "any"
        plat = (self.plat_name or sysconfig.get_platform()).replace("-", "_").replace(".", "_")
        return "py3", "none", plat


setup(
    packages=find_packages(include=["pmuprof", "pmuprof.*"])
    + ["pmuprof.templates", "pmuprof.rules", "pmuprof.rules.knowledge", "pmuprof.demo"],
    package_dir={"pmuprof.templates": "templates", "pmuprof.rules": "rules", "pmuprof.demo": "examples/demo"},
    package_data={
        "pmuprof.templates": ["*.j2", "*.js", "*.css"],
        "pmuprof.rules": ["*.yaml"],
        "pmuprof.rules.knowledge": ["*.yaml"],
        "pmuprof.demo": ["*.c", "*.h", "Makefile"],
    },
    cmdclass={"build_py": BuildWithHelper, "bdist_wheel": TruthfulWheel},
)

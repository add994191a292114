"""Build hook of pmuprof: compile the optional native helpers and tag the wheel by what it holds.

The metadata is in pyproject.toml. The helpers (pmuprof-helper, pmuprof-fold) are ELF files linked
to this host's libpfm4 / libdw / capstone, so a wheel that carries them is tagged
py3-none-linux_<arch> (not py3-none-any): it installs only on that architecture and needs the same
runtime libraries (libpfm4, libdw1, libcapstone4 on Debian 12). Without a compiler or the -dev
packages, or with PMUPROF_BUILD_NATIVE=0, the wheel has no ELF file and is py3-none-any.
"""

import os
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


def _want_native() -> bool:
    return os.environ.get("PMUPROF_BUILD_NATIVE", "1") not in ("0", "no", "false", "")


class BuildWithHelper(build_py):
    """Also build native/ into pmuprof/bin; without its libraries, install without it and say why."""

    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "pmuprof" / "bin"
        shutil.rmtree(target, ignore_errors=True)  # never ship helpers left in build/ by an earlier build
        if not _want_native():
            sys.stderr.write("pmuprof: PMUPROF_BUILD_NATIVE=0: building a pure-Python package without helpers\n")
            return
        try:
            subprocess.run(["make", "-C", str(HERE / "native")], check=True)
        except (OSError, subprocess.CalledProcessError) as err:
            sys.stderr.write(
                f"pmuprof: native helper not built ({err}); the package installs without it.\n"
                f"pmuprof: to enable PMU events, PAUSE calibration and skid correction: {HELPER_HINT}\n"
            )
            return
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
    packages=find_packages(include=["pmuprof", "pmuprof.*"]) + ["pmuprof.templates", "pmuprof.rules", "pmuprof.demo"],
    package_dir={"pmuprof.templates": "templates", "pmuprof.rules": "rules", "pmuprof.demo": "examples/demo"},
    package_data={
        "pmuprof.templates": ["*.j2", "*.js", "*.css"],
        "pmuprof.rules": ["*.yaml", "knowledge/*.yaml"],
        "pmuprof.demo": ["*.c", "*.h", "Makefile"],
    },
    cmdclass={"build_py": BuildWithHelper, "bdist_wheel": TruthfulWheel},
)

"""Build pmuprof: the Python package, its templates/rules/demo data, and the optional native helper."""

import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
HELPER_PACKAGES = "libpfm4-dev libdw-dev libelf-dev libcapstone-dev libiberty-dev pkg-config gcc make"


class BuildWithHelper(build_py):
    """Also build native/pmuprof-helper; without its libraries, install without it and say why."""

    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "pmuprof" / "bin"
        try:
            subprocess.run(["make", "-C", str(HERE / "native")], check=True)
        except (OSError, subprocess.CalledProcessError) as err:
            sys.stderr.write(
                f"pmuprof: native helper not built ({err}); the package installs without it.\n"
                f"pmuprof: to enable PMU events, PAUSE calibration and skid correction: apt-get install {HELPER_PACKAGES}\n"
            )
            return
        for name in ("pmuprof-helper", "pmuprof-fold", "pmuprof-perfdata", "pmuprof-offcpu"):
            built = HERE / "native" / "build" / name
            if built.is_file():
                target.mkdir(parents=True, exist_ok=True)
                shutil.copy2(built, target / name)


setup(
    name="pmuprof",
    version="0.1.0",
    description="Profile mysqld/mariadbd with perf and PMU counters; a rules engine names the hotspot and the fix",
    long_description=(HERE / "README.md").read_text(encoding="utf-8") if (HERE / "README.md").exists() else "",
    long_description_content_type="text/markdown",
    python_requires=">=3.9",
    packages=find_packages(include=["pmuprof", "pmuprof.*"]) + ["pmuprof.templates", "pmuprof.rules", "pmuprof.demo"],
    package_dir={"pmuprof.templates": "templates", "pmuprof.rules": "rules", "pmuprof.demo": "examples/demo"},
    package_data={
        "pmuprof.templates": ["*.j2", "*.js", "*.css"],
        "pmuprof.rules": ["*.yaml", "knowledge/*.yaml"],
        "pmuprof.demo": ["*.c", "*.h", "Makefile"],
    },
    install_requires=["click>=8.0", "Jinja2>=3.0", "PyYAML>=5.4", "PyMySQL>=1.0", "numpy>=1.22"],
    extras_require={"test": ["pytest>=7"]},
    entry_points={"console_scripts": ["pmuprof=pmuprof.cli.main:main"]},
    cmdclass={"build_py": BuildWithHelper},
)

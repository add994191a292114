"""Whether a native program can start on this host, and the fix for one that is missing or cannot start."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from ...packages import LIBRARIES, apt_install, apt_install_runtime
from ...paths import installed_copy
from .. import proc

_LOADER = re.compile(r"error while loading shared libraries: (\S+?): (.+)")


def startup_error(binary: Path) -> str:
    """'' when the dynamic loader starts ``binary`` (run without arguments, it prints its usage), else
    the loader's reason: "libbpf.so.1: cannot open shared object file: No such file or directory"."""
    try:
        res = proc.run([str(binary)], timeout=30)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"{binary}: {getattr(err, 'strerror', None) or err}"
    found = _LOADER.search(res.stderr)
    return f"{Path(found.group(1)).name}: {found.group(2).strip()}" if found else ""


def fix(features: tuple[str, ...], error: str = "") -> str:
    """How to get a program of these features running. It cannot start: the runtime package of the library
    the loader named (else all its runtime packages). It is missing: in a pip-installed copy, a wheel built
    with it (the build host's packages); in a checkout, the -dev packages and make -C native."""
    if error:
        lib = error.split(":", 1)[0]
        return f"apt-get install {LIBRARIES[lib]}" if lib in LIBRARIES else apt_install_runtime(*features)
    if installed_copy():
        return (
            f"install a wheel built with it (on the build host: {apt_install(*features)}; "
            "pip wheel --no-deps -w dist SDIST)"
        )
    return f"{apt_install(*features)}; make -C native"

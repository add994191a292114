"""Doctor checks of the native programs: each one present, able to start, and with its features."""

from __future__ import annotations

from pathlib import Path

from ..capture.offcpu import tracer
from ..errors import PmuprofError
from ..packages import HELPER, PACKAGES, PERFDATA
from ..paths import fold_path, helper_path
from ..tools.native import helper, runnable
from ..tools.native.perfdata import perfdata_path
from .doctor_check import Check


def _program(cid: str, name: str, path: Path | None, features: tuple[str, ...], without: str) -> Check | None:
    """The MISS line of a program that is not there or cannot start; None when it starts."""
    if path is None:
        return Check(cid, name, False, f"{without} (not installed)", runnable.fix(features), "warning")
    broken = runnable.startup_error(path)
    if broken:
        return Check(
            cid, name, False, f"{path} cannot start: {broken}; {without}", runnable.fix(features, broken), "warning"
        )
    return None


def helper_check() -> Check:
    path = helper_path()
    missing = _program(
        "helper", "native helper", path, HELPER, "no libpfm4 encoding, PAUSE calibration or skid correction"
    )
    if missing:
        return missing
    try:
        info = helper.features()
    except PmuprofError as err:  # a broken helper must not break doctor
        return Check("helper", "native helper", False, f"{path}: {err}", runnable.fix(HELPER, str(err)), "warning")
    off = tuple(k for k, v in info.items() if v is False)
    hint = runnable.fix(off if set(off) <= set(PACKAGES) else HELPER)  # only the features that are off
    return Check(
        "helper",
        "native helper",
        not off,
        f"{path}" + (f" (off: {', '.join(off)})" if off else ""),
        hint if off else "",
        "warning",
    )


def folder_check() -> Check:
    path = fold_path()
    return _program(
        "folder", "fast folder", path, ("compiler",), "folding perf script text in Python (slower)"
    ) or Check("folder", "fast folder", True, str(path))


def perfdata_check() -> Check:
    path = perfdata_path()
    return _program(
        "perfdata",
        "perf.data reader",
        path,
        PERFDATA,
        "perf.data is read through `perf script` (2-2.4x slower, no inline expansion)",
    ) or Check("perfdata", "perf.data reader", True, str(path))


def offcpu_check() -> Check:
    """The off-CPU tracer: built, its libraries (libbpf), the kernel's BTF, CAP_BPF and CAP_PERFMON; its mode."""
    why, fix = tracer.unavailable(())
    if why:
        return Check("offcpu", "off-CPU tracer", False, why, fix, "warning")
    mode = (
        "lazy: stacks for blocks of 1 ms or more, on by default in capture"
        if tracer.cheap_here()
        else "eager only (kernel without sched_exit_tp): ~3 us a switch, on only with --off-cpu"
    )
    return Check("offcpu", "off-CPU tracer", True, f"{tracer.offcpu_path()}, BTF, CAP_BPF, CAP_PERFMON ({mode})")


CHECKS = (helper_check, folder_check, perfdata_check, offcpu_check)

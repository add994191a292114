"""Kernel frames this host cannot name: say why (another boot's kernel, hidden kallsyms), never "stripped"."""

from __future__ import annotations

import contextlib
import gzip
import os
import tempfile
from pathlib import Path
from collections.abc import Iterator

from .. import infile
from ..model import rundir
from ..model.analysis import StackQuality
from ..model.run import KernelSymbols, Run
from ..tools import elf

KERNEL_DSO = "[kernel.kallsyms]"
SAY_FROM = 0.01  # said when at least this share of a process's samples end in unnamed kernel code
MAX_KALLSYMS = 64 * 2**20  # a kept kallsyms.gz that inflates past this is not used


PROC_KALLSYMS = Path("/proc/kallsyms")
PERF_CACHE = Path.home() / ".debug"  # perf's build-id cache (perf record copies kallsyms there)


@contextlib.contextmanager
def recorded_kallsyms(
    run_dir: Path | None,
    run: Run,
    running_build_id: str | None = None,
    recorded_build_id: str | None = None,
    symfs: bool = False,
) -> Iterator[Path | None]:
    """The kernel symbols of the boot that recorded, as a file for perf's --kallsyms, or None where perf
    finds them itself. On another kernel: the run directory's copy (inflated into a temporary file).
    With ``symfs`` (perf then reads kallsyms under it, where there is none): /proc/kallsyms for this
    kernel, perf's own cached copy for another."""
    kept = run.kernel_symbols
    running_build_id = running_build_id if running_build_id is not None else elf.running_kernel_build_id()
    recorded = recorded_build_id or (kept.build_id if kept is not None else None)
    if recorded and recorded == running_build_id:
        yield PROC_KALLSYMS if symfs else None
        return
    source = rundir.kept_file(run_dir, kept.file if kept is not None else "", rundir.KALLSYMS)
    cached = PERF_CACHE / KERNEL_DSO / recorded / "kallsyms" if recorded else None
    if kept is None or source is None or (recorded and kept.build_id != recorded):
        yield cached if symfs and cached is not None and cached.is_file() else None
        return
    with tempfile.TemporaryDirectory(prefix="pmuprof-kallsyms-") as tmp:
        try:
            with (
                os.fdopen(infile.open_evidence(source, infile.ANY_SIZE), "rb") as raw,
                gzip.GzipFile(fileobj=raw) as src,
            ):
                data = src.read(MAX_KALLSYMS + 1)
        except (OSError, EOFError):
            data = b""
        if not data or len(data) > MAX_KALLSYMS:
            yield None
            return
        path = Path(tmp) / "kallsyms"
        path.write_bytes(data)
        yield path


def kernel_warnings(
    quality: tuple[StackQuality, ...],
    recorded_build_id: str | None,
    recorded_kernel: str,
    running_build_id: str | None = None,
    running_kernel: str | None = None,
    kept: KernelSymbols | None = None,
) -> tuple[str, ...]:
    """One line when kernel frames stayed unnamed: how many, why here, and how to get them named.

    ``recorded_*``: the perf.data's kernel build-id and the run's kernel release; ``running_*``: this host's
    (read here when not given); ``kept``: what the capture said of the copy it kept (run.json)."""
    worst = max(quality, key=lambda q: q.unresolved_kernel_share, default=None)
    if worst is None or worst.unresolved_kernel_share < SAY_FROM:
        return ()
    running_build_id = running_build_id if running_build_id is not None else elf.running_kernel_build_id()
    running_kernel = running_kernel if running_kernel is not None else os.uname().release
    share = f"{worst.unresolved_kernel_share:.0%} of {worst.process} samples end in kernel code"
    if recorded_build_id and recorded_build_id == running_build_id:
        return (
            f"kernel frames unresolved: {share} that this host's kernel (the one that recorded them) does "
            "not name for this user (kernel.kptr_restrict, or not root): not a stripped binary; re-report as "
            "root",
        )
    was = f"kernel {recorded_kernel or '?'}" + (f", build-id {recorded_build_id[:12]}" if recorded_build_id else "")
    now = f"{running_kernel}" + (f", build-id {running_build_id[:12]}" if running_build_id else "")
    if kept is not None and kept.file:
        fix = f"the run directory's {kept.file} (kept by the capture) is missing or damaged: restore it"
    elif kept is not None and kept.why_not:
        fix = f"the capture kept no kernel symbols ({kept.why_not}): capture as root"
    else:
        fix = "re-report the run directory pmuprof capture wrote (it keeps that boot's kernel symbols)"
    return (
        f"kernel frames of another boot: {share} that no kernel symbols here name (recorded on {was}; "
        f"this host runs {now}): not a stripped binary; {fix}, or on the recording host run `perf archive "
        "PERF.DATA` and here `tar xf PERF.DATA.tar.bz2 -C ~/.debug`",
    )

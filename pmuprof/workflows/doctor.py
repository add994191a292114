"""Capability checks for `pmuprof doctor`: one (name, ok, detail, fix) per capability."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from ..analysis import binaries
from ..errors import PmuprofError
from ..capture.target import host, process as target
from ..packages import HELPER, PACKAGES, apt_install
from ..paths import fold_path, helper_path, perf_path
from ..tools.native import helper


EXIT_MISS = 9  # doctor --strict when a check is MISS


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""


def run_checks(pids: tuple[int, ...] = (), out_dir: Path = Path(".")) -> list[Check]:
    perf = perf_path()
    facts = host.facts(perf if perf and shutil.which(perf) else None)
    checks = [_perf(perf, facts), _paranoid(facts), _pmu(facts), _helper(), _folder(), _disk(out_dir)]
    for pid in pids or tuple(target.find_mysqld()):
        checks += _target(pid)
    if not pids and not target.find_mysqld():
        checks.append(Check("target", False, "no mysqld / mariadbd running", "start the server, or pass -p PID"))
    return checks


def _perf(perf, facts) -> Check:
    if not facts["perf_version"]:
        return Check("perf", False, "perf not found", f"{apt_install('perf')} (or set PMUPROF_PERF)")
    return Check("perf", True, f"{perf} version {facts['perf_version']}")


def _paranoid(facts) -> Check:
    value, root = facts["perf_event_paranoid"], facts["is_root"]
    ok = root or (value is not None and value <= 0)
    return Check("perf_event_paranoid", ok, f"{value} ({'root: not limited' if root else 'non-root'})",
                 "" if ok else "run as root, or `sysctl kernel.perf_event_paranoid=-1`, or grant CAP_PERFMON")


def _pmu(facts) -> Check:
    pfm = helper.core_pmu() if helper_path() else ""
    cpu = f"{facts['cpu_model']} ({facts['microarch']}{', libpfm4: ' + pfm if pfm else ''})"
    if facts["hardware_pmu"]:
        return Check("hardware PMU", True, f"cycles countable on {cpu}")
    where = " in a VM" if facts["flags_hypervisor"] else ""
    return Check("hardware PMU", False, f"no usable PMU{where} on {cpu}: perf samples cpu-clock, no IPC",
                 "run on bare metal or enable the VM's vPMU; pmuprof still profiles with cpu-clock")


def _helper() -> Check:
    path = helper_path()
    if not path:
        return Check("native helper", False, "pmuprof-helper not built: no libpfm4 encoding, PAUSE calibration or skid "
                     "correction", f"{apt_install(*HELPER)}; reinstall pmuprof")
    try:
        info = helper.features()
    except PmuprofError as err:  # a broken helper must not break doctor
        return Check("native helper", False, f"{path}: {err}", "rebuild with `make -C native`")
    off = [f"{k}" for k, v in info.items() if v is False]
    hint = apt_install(*off) if set(off) <= set(PACKAGES) else apt_install(*HELPER)  # only the features that are off
    return Check("native helper", not off, f"{path}" + (f" (off: {', '.join(off)})" if off else ""),
                 f"{hint}; reinstall" if off else "")


def _folder() -> Check:
    path = fold_path()
    return Check("fast folder", bool(path), str(path) if path else "pmuprof-fold not built: folding in Python (slower)",
                 "" if path else f"{apt_install('compiler')}; reinstall pmuprof")


def _disk(out_dir: Path) -> Check:
    probe = out_dir.absolute()
    while not probe.exists() and probe != probe.parent:  # the filesystem a new -o directory would be on
        probe = probe.parent
    try:
        free = shutil.disk_usage(probe).free
    except OSError as err:
        return Check("free disk", False, f"{probe}: {err.strerror}", "choose an -o on a readable filesystem")
    ok = free > 1 << 30
    return Check("free disk", ok, f"{free / 2**30:.1f} GiB free in {probe.resolve()}",
                 "" if ok else "free space or capture with -o on a larger filesystem")


def _target(pid: int) -> list[Check]:
    try:
        tgt = target.describe(target.resolve_pid(pid))
    except PmuprofError as err:
        return [Check(f"target {pid}", False, str(err), "pass a running server's pid")]
    label = f"{tgt.comm} {pid}"
    syms = tgt.symbols
    if syms is None or syms.error:
        return [Check(f"symbols ({label})", False, syms.error if syms else "binary not readable", "")]
    found = binaries.find(tgt.exe, tgt.build_id, 0, binaries.Lookup())
    full = syms.symtab > 0 or bool(found.debuginfo)
    where = ("full .symtab" if syms.symtab else f"separate debuginfo {found.debuginfo}" if found.debuginfo
             else "only .dynsym")
    sym = Check(f"symbols ({label})", full,
                f"{where}: {syms.symtab or syms.dynsym} named functions in the binary"
                f"{'' if full else ' (InnoDB frames will be unnamed)'}",
                "" if full else "install the debug symbols: Debian `mariadb-server-core-dbgsym` (debian-debug "
                "archive) or set DEBUGINFOD_URLS; RHEL `debuginfo-install`")
    fp = syms.frame_pointers
    fpc = Check(f"frame pointers ({label})", fp == "likely", f"{fp} ({syms.frame_pointer_ratio or 0:.0%} of "
                "sampled functions keep rbp)", "" if fp == "likely" else "use --call-graph dwarf (larger perf.data)")
    return [sym, fpc]

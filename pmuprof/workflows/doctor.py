"""Capability checks for `pmuprof doctor`: one Check (id, name, ok, detail, fix, severity) per capability."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from .. import arch
from ..analysis import binaries
from ..errors import PmuprofError
from ..capture import caps as capabilities
from ..capture.mysql import facts as mysql
from ..capture.proc import host, process as target
from ..packages import apt_install
from ..paths import helper_path, perf_path
from ..tools.native import helper
from .doctor_check import SEVERITIES, Check
from .doctor_native import CHECKS as NATIVE_CHECKS

EXIT_MISS = 9  # doctor --strict when a check of that severity or worse is MISS
__all__ = ["Check", "EXIT_MISS", "failing", "run_checks"]


def run_checks(
    pids: tuple[int, ...] = (),
    out_dir: Path = Path("."),
    mysql_options: mysql.MysqlOptions | None = mysql.MysqlOptions(),
) -> list[Check]:
    """Host checks, one per native program, then per server: symbols, frame pointers and the MySQL
    connection (``mysql_options`` None: --no-mysql, not checked)."""
    perf = perf_path()
    facts = host.facts(perf if perf and shutil.which(perf) else None)
    held = capabilities.effective()
    checks = [_perf(perf, facts), _paranoid(facts, held), _caps(held), _pmu(facts)]
    checks += [*(check() for check in NATIVE_CHECKS), _disk(out_dir)]
    found = pids or tuple(target.find_mysqld())
    for pid in found:
        lines = _target(pid, asked=bool(pids))
        checks += lines
        gone = not pids and lines[0].id == "target"  # found, then exited: no server left to connect to
        if mysql_options is not None and not gone:
            checks.append(_mysql(_process(pid), mysql_options))
    if not found:
        checks.append(
            Check("target", "target", False, "no mysqld / mariadbd running", "start the server, or pass -p PID", "info")
        )
    return checks


def failing(checks: list[Check], threshold: str) -> list[Check]:
    """The MISS checks whose severity is ``threshold`` or worse (SEVERITIES runs from the worst)."""
    worst = SEVERITIES.index(threshold)
    return [c for c in checks if not c.ok and SEVERITIES.index(c.severity) <= worst]


def _perf(perf, facts) -> Check:
    if not facts["perf_version"]:
        return Check("perf", "perf", False, "perf not found", f"{apt_install('perf')} (or set PMUPROF_PERF)", "error")
    return Check("perf", "perf", True, f"{perf} version {facts['perf_version']}", severity="error")


def _paranoid(facts, held: frozenset[str]) -> Check:
    """Per-CPU sampling: perf_event_paranoid <= 0, or CAP_PERFMON in the effective set (not the uid)."""
    value, capable = facts["perf_event_paranoid"], capabilities.perfmon_capable(held)
    ok = capable or (value is not None and value <= 0)
    return Check(
        "perf-event-paranoid",
        "perf_event_paranoid",
        ok,
        f"{value} ({'CAP_PERFMON: not limited' if capable else 'without CAP_PERFMON'})",
        "" if ok else "run as root, or grant CAP_PERFMON, or `sysctl kernel.perf_event_paranoid=-1`",
        "error",
    )


def _caps(held: frozenset[str]) -> Check:
    """The capabilities a capture of another user's server uses beyond perf's and the tracer's."""
    lacking = [name for name in capabilities.LOSSES if name not in held]
    detail = "; ".join(f"no {name}: {capabilities.LOSSES[name]}" for name in lacking) or "held: " + ", ".join(
        sorted(capabilities.LOSSES)
    )
    if "CAP_SYS_ADMIN" not in held:  # left out of the units on purpose: wchan still names the wait
        detail += "; no CAP_SYS_ADMIN: threads' kernel stacks (/proc/TID/stack) are not read, wchan is"
    return Check(
        "capabilities",
        "capabilities",
        not lacking,
        detail,
        "" if not lacking else f"run as root, or add {' '.join(lacking)} (a unit: CapabilityBoundingSet=)",
        "warning",
    )


def _pmu(facts) -> Check:
    pfm = helper.core_pmu() if helper_path() else ""
    cpu = f"{facts['cpu_model']} ({facts['microarch']}{', libpfm4: ' + pfm if pfm else ''})"
    if facts["hardware_pmu"]:
        return Check("pmu", "hardware PMU", True, f"cycles countable on {cpu}")
    where = " in a VM" if facts["flags_hypervisor"] else ""
    return Check(
        "pmu",
        "hardware PMU",
        False,
        f"no usable PMU{where} on {cpu}: perf samples cpu-clock, no IPC",
        "run on bare metal or enable the VM's vPMU; pmuprof still profiles with cpu-clock",
        "info" if where else "warning",
    )


def _disk(out_dir: Path) -> Check:
    probe = out_dir.absolute()
    while not probe.exists() and probe != probe.parent:  # the filesystem a new -o directory would be on
        probe = probe.parent
    try:
        free = shutil.disk_usage(probe).free
    except OSError as err:
        return Check(
            "disk", "free disk", False, f"{probe}: {err.strerror}", "choose an -o on a readable filesystem", "error"
        )
    ok = free > 1 << 30
    return Check(
        "disk",
        "free disk",
        ok,
        f"{free / 2**30:.1f} GiB free in {probe.resolve()}",
        "" if ok else "free space or capture with -o on a larger filesystem",
        "error",
    )


def _target(pid: int, asked: bool = True) -> list[Check]:
    """Symbols and frame pointers of one server. A pid doctor found itself (no -p) whose server has exited since
    is said as info: a server restarting, or one of another root's (/proc shows the host's), is no capture's
    failure here; a pid asked for that is not a running server is an error."""
    try:
        tgt = target.describe(target.resolve_pid(pid))
    except PmuprofError as err:
        if not asked:
            return [Check("target", "target", False, f"{pid}: exited while doctor ran ({err})", "", "info", pid)]
        return [Check("target", "target", False, f"{pid}: {err}", "pass a running server's pid", "error", pid)]
    label = f"{tgt.comm} {pid}"
    syms = tgt.symbols
    if syms is None or syms.error:
        return [
            Check("symbols", "symbols", False, f"{label}: {syms.error if syms else 'binary not readable'}", pid=pid)
        ]
    found = binaries.find(tgt.exe, tgt.build_id, 0, binaries.Lookup())
    full = syms.symtab > 0 or bool(found.debuginfo)
    where = (
        "full .symtab"
        if syms.symtab
        else f"separate debuginfo {found.debuginfo}"
        if found.debuginfo
        else "only .dynsym"
    )
    sym = Check(
        "symbols",
        "symbols",
        full,
        f"{label}: {where}: {syms.symtab or syms.dynsym} named functions in the binary"
        f"{'' if full else ' (InnoDB frames will be unnamed)'}",
        ""
        if full
        else "install the debug symbols: Debian `mariadb-server-core-dbgsym` (debian-debug "
        "archive) or set DEBUGINFOD_URLS; RHEL `debuginfo-install`",
        pid=pid,
    )
    fp = syms.frame_pointers
    fpc = Check(
        "frame-pointers",
        "frame pointers",
        fp == "likely",
        f"{label}: {fp} ({syms.frame_pointer_ratio or 0:.0%} of sampled functions keep {arch.FRAME_POINTER_REGISTER})",
        "" if fp == "likely" else "use --call-graph dwarf (larger perf.data)",
        pid=pid,
    )
    return [sym, fpc]


_GLOBAL_GRANT = re.compile(r"^GRANT (.+?) ON \*\.\* TO ", re.I)


def _mysql(pid: int, opts: mysql.MysqlOptions) -> Check:
    """Whether capture's server facts can be read: a connection as capture makes it, proven to reach ``pid``
    (else the line says which server answered instead), and the PROCESS privilege (SHOW ENGINE INNODB
    STATUS, other sessions in the processlist)."""
    try:
        conn, endpoint, _secrets = mysql.connect(opts, pid)
    except ConnectionError as err:
        return Check(
            "mysql",
            "MySQL connection",
            False,
            f"pid {pid}: {err}",
            "pass --mysql-socket / -u / --defaults-file as for capture (a client option file with a "
            "user that has PROCESS), or capture with --no-mysql",
            "warning",
            pid,
        )
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT CURRENT_USER(), VERSION()")
            user, version = cur.fetchone()
            cur.execute("SHOW GRANTS")
            grants = [row[0] for row in cur.fetchall()]
    except Exception as err:  # noqa: BLE001 - any driver error is this check's MISS, never doctor's traceback
        return Check(
            "mysql", "MySQL connection", False, f"pid {pid}: connected by {endpoint} but: {err}", "", "warning", pid
        )
    finally:
        conn.close()
    privs = " ".join(m.group(1).upper() for g in grants if (m := _GLOBAL_GRANT.match(g)))
    process = "ALL PRIVILEGES" in privs or re.search(r"\bPROCESS\b", privs) is not None
    return Check(
        "mysql",
        "MySQL connection",
        process,
        f"pid {pid}: {user} by {endpoint}, {version} ({endpoint.proof})"
        + ("" if process else ": no PROCESS privilege (no InnoDB status, own sessions only)"),
        "" if process else f"GRANT PROCESS ON *.* TO {_quoted(user)}",
        "warning",
        pid,
    )


def _process(pid: int) -> int:
    """The process a pid belongs to (a thread id names its process), as the connection proof compares it."""
    try:
        return target.resolve_pid(pid)
    except PmuprofError:
        return pid


def _quoted(user: str) -> str:
    name, _, where = user.partition("@")
    return f"'{name}'@'{where}'" if where else f"'{name}'"

"""Install/remove the nightly timer (systemd or cron), report its status, and apply retention."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import time
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any
from collections.abc import Callable

from .. import outfile
from ..capture import diskroom
from ..rundir_create import check_runs_dir
from ..tools import proc as tools_proc
from ..errors import PmuprofError, ResourceError, UsageError
from ..model.rundir import CONTROL_FIFOS, PERF_DATA, ROOM, RUN_JSON, output_name, read_json
from .schedule import CRON_FILE, RUN_FILES, UNIT_NAME, Deletion, RunEntry, ScheduleSpec, is_pmuprof_run, plan_retention
from .schedule_units import cron_text, service_unit, timer_unit

UNIT_DIR = Path("/etc/systemd/system")
# The Debian package's copy of the units, with schedule install's defaults; a unit in UNIT_DIR overrides it.
VENDOR_UNIT_DIR = Path("/lib/systemd/system")
SYSTEMCTL_TIMEOUT_S = 60
HEADER = "# Written by `pmuprof schedule install`"
SPEC_PREFIX = "# pmuprof-spec: "


def systemd_running() -> bool:
    """sd_booted(): systemd is PID 1 here and systemctl exists."""
    return Path("/run/systemd/system").is_dir() and shutil.which("systemctl") is not None


def _with_spec(text: str, spec: ScheduleSpec) -> str:
    return text + SPEC_PREFIX + json.dumps(asdict(spec), sort_keys=True) + "\n"


def _paths(root: Path) -> tuple[Path, Path, Path]:
    """(service, timer, cron file) under ``root`` (``/`` on a real host; a folder in tests)."""
    units = root / UNIT_DIR.relative_to("/")
    return units / f"{UNIT_NAME}.service", units / f"{UNIT_NAME}.timer", root / CRON_FILE.lstrip("/")


def rendered(spec: ScheduleSpec, systemd: bool, root: Path = Path("/"), cron_offset_s: int = 0) -> dict[str, str]:
    """File path → content that install would write."""
    service, timer, cron = _paths(root)
    if systemd:
        return {str(service): _with_spec(service_unit(spec), spec), str(timer): timer_unit(spec)}
    return {str(cron): _with_spec(cron_text(spec, cron_offset_s), spec)}


def _systemctl(*args: str) -> subprocess.CompletedProcess[str]:
    try:
        proc = tools_proc.run(["systemctl", *args], SYSTEMCTL_TIMEOUT_S, stall=False)
    except subprocess.TimeoutExpired as err:
        raise PmuprofError(
            f"systemctl {' '.join(args)} did not answer within {SYSTEMCTL_TIMEOUT_S} s",
            "check systemd (systemctl status) and retry",
        ) from err
    except OSError as err:
        raise PmuprofError(
            f"cannot run systemctl: {err.strerror}", "use --scheduler cron on hosts without systemd"
        ) from err
    if proc.returncode != 0 and args[0] not in ("show", "is-active", "disable"):
        raise PmuprofError(
            f"systemctl {' '.join(args)} failed: {proc.stderr.strip() or proc.returncode}",
            "run as root on a host booted with systemd, or see journalctl -xe",
        )
    return proc


def _ours(path: Path) -> bool:
    try:
        return path.is_file() and HEADER in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def install(spec: ScheduleSpec, systemd: bool, root: Path = Path("/"), cron_offset_s: int = 0) -> list[str]:
    """Write the units (or cron file) and enable the timer; refuse to overwrite foreign files.
    The run directory is created now: the sandboxed unit may only write into existing paths."""
    files = rendered(spec, systemd, root, cron_offset_s)
    for name in files:
        if Path(name).exists() and not _ours(Path(name)):
            raise UsageError(f"{name} exists and was not written by pmuprof", "move it away or pick another host")
    (root / spec.directory.lstrip("/")).mkdir(parents=True, exist_ok=True, mode=0o750)
    for name, text in files.items():
        outfile.ensure_dir(Path(name).parent)
        outfile.write_text(Path(name), text)
    if systemd and root == Path("/"):  # under another root (a package being built) nothing is enabled
        _systemctl("daemon-reload")
        _systemctl("enable", "--now", f"{UNIT_NAME}.timer")
    return [f"wrote {name}" for name in files]


def remove(systemd: bool, root: Path = Path("/")) -> list[str]:
    """Disable the timer and delete the files pmuprof wrote (never a foreign file)."""
    out = []
    if systemd:
        _systemctl("disable", "--now", f"{UNIT_NAME}.timer")
    for path in _paths(root):
        if _ours(path):
            path.unlink()
            out.append(f"removed {path}")
    if systemd and out:
        _systemctl("daemon-reload")
    return out or ["nothing installed"]


def installed_spec(root: Path = Path("/")) -> dict | None:
    service, _, cron = _paths(root)
    vendor = root / VENDOR_UNIT_DIR.relative_to("/") / service.name
    for path in (service, vendor, cron):
        if _ours(path):
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.startswith(SPEC_PREFIX):
                    return json.loads(line[len(SPEC_PREFIX) :])
    return None


def status(systemd: bool, root: Path = Path("/")) -> dict:
    """What is installed, when it runs next, how the last run ended, and the latest run directory."""
    spec = installed_spec(root)
    out: dict = {"installed": spec is not None, "spec": spec, "scheduler": "systemd" if systemd else "cron"}
    if systemd and spec is not None:
        timer = _systemctl("show", f"{UNIT_NAME}.timer", "-p", "NextElapseUSecRealtime,LastTriggerUSec,ActiveState")
        svc = _systemctl("show", f"{UNIT_NAME}.service", "-p", "Result,ExecMainStatus,ActiveState")
        for line in (timer.stdout + svc.stdout).splitlines():
            key, _, val = line.partition("=")
            out[key] = val
    if spec is not None:
        runs = [e for e in scan_runs(Path(spec["directory"])) if e.is_pmuprof]
        out["runs"] = len(runs)
        out["latest"] = max(runs, key=lambda e: e.started).name if runs else None
    return out


def _owned_files(run: Path) -> list[Path]:
    """Files in a run directory that pmuprof writes (by name, temp names included): regular files, and
    perf's control FIFOs left by a capture that was killed; symlinks never count."""
    out = []
    for child in run.iterdir():
        try:
            mode = child.lstat().st_mode
        except OSError:
            continue
        base = output_name(
            child.name[:-4] if child.name.endswith(".tmp") and child.name[:-4] in RUN_FILES else child.name
        )
        if base in RUN_FILES and (stat.S_ISREG(mode) or (stat.S_ISFIFO(mode) and base in CONTROL_FIFOS)):
            out.append(child)
    return out


def _only_ours(run: Path) -> bool:
    """Every entry is a file pmuprof writes: a run whose run.json was damaged is still pmuprof's."""
    try:
        return len(_owned_files(run)) == len(list(run.iterdir())) > 0
    except OSError:
        return False


def scan_runs(
    directory: Path, owner: Callable[[Any], bool] = is_pmuprof_run, now: float | None = None
) -> list[RunEntry]:
    """Each real (non-symlink) directory directly under ``directory``; ``owner`` says which run.json marks
    a run retention may delete (a damaged run.json: when every entry is a file pmuprof writes)."""
    if not directory.is_dir():
        return []
    now = time.time() if now is None else now
    out = []
    for child in sorted(directory.iterdir()):
        if child.is_symlink() or not child.is_dir():
            continue
        try:
            run = read_json(child / RUN_JSON, None)
            damaged = False
        except PmuprofError:
            run, damaged = None, True
        ours = (owner(run) or (damaged and _only_ours(child))) and not (child / RUN_JSON).is_symlink()
        if ours:
            diskroom.sweep(child)  # the room a killed capture left (6 MiB on two CPUs) goes back now
        started = _started(run, child)
        size = sum(f.stat().st_size for f in _owned_files(child)) if ours else 0
        out.append(RunEntry(child.name, started, size, ours, busy=ours and _busy(child, now)))
    return out


BUSY_FOR_S = 2 * 3600  # the longest capture (1 h) and its report; older in-progress marks are a killed capture's


def _busy(run: Path, now: float) -> bool:
    """A capture is writing here now: its room file or perf's control FIFO exists and a live perf holds perf.data
    or the FIFO open (a SIGKILLed capture leaves both files, but no perf); where /proc does not show other
    processes' files, a recent run.json stands for it."""
    if not any(os.path.lexists(run / name) for name in (ROOM, *CONTROL_FIFOS)):
        return False
    held = tools_proc.held_open([str((run / name).resolve()) for name in (PERF_DATA, *CONTROL_FIFOS)])
    if held is not None:
        return held
    try:
        return now - (run / RUN_JSON).stat().st_mtime < BUSY_FOR_S
    except OSError:
        return True  # no run.json yet: record has only just begun


def _started(run: object, path: Path) -> float:
    text = run.get("started") if isinstance(run, dict) else None
    if isinstance(text, str):
        try:
            return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    return path.stat().st_mtime


def delete_run(run: Path) -> list[str]:
    """Delete pmuprof's files in one run directory; the directory goes only if it is then empty.
    Returns the names of foreign entries that were kept."""
    for path in _owned_files(run):
        path.unlink()
    kept = sorted(p.name for p in run.iterdir())
    if not kept:
        run.rmdir()
    return kept


def prune(
    directory: Path,
    keep_days: float | None,
    keep_bytes: int | None,
    dry_run: bool = False,
    now: float | None = None,
    keep_count: int | None = None,
    owner: Callable[[Any], bool] = is_pmuprof_run,
) -> list[tuple[Deletion, list[str]]]:
    """Apply retention to ``directory`` (only runs whose run.json ``owner`` accepts); each deletion comes
    with the foreign files it left."""
    if keep_days is None and keep_bytes is None and keep_count is None:
        raise UsageError("retention needs --keep-days or --keep-size", "e.g. --keep-days 14 --keep-size 5G")
    if not directory.is_dir():
        raise ResourceError(f"{directory}: no such directory", "check --dir")
    check_runs_dir(directory, "--dir")
    now = time.time() if now is None else now
    plan = plan_retention(scan_runs(directory, owner, now), now, keep_days, keep_bytes, keep_count)
    done = []
    for deletion in plan:
        target = directory / deletion.name
        done.append((deletion, [] if dry_run else delete_run(target)))
    return done


def disk_free(path: Path) -> tuple[int, int]:
    """(free bytes for an unprivileged writer, total bytes) of the filesystem holding ``path``."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    st = os.statvfs(probe)
    return st.f_bavail * st.f_frsize, st.f_blocks * st.f_frsize

"""Run the native pmuprof-helper and return its JSON; the one place outside capture/ that starts it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any
from collections.abc import Iterable, Sequence

from ...errors import HelperError
from ...packages import HELPER, apt_install
from .. import proc
from ...paths import helper_path

BUILD_FIX = f"build it: {apt_install(*HELPER)}; make -C native (or reinstall pmuprof)"
FEATURE_FIX = {name: f"{apt_install(name)}, then make -C native" for name in ("libpfm4", "elfutils", "capstone")}
# Which helper features each command needs (a command fails cleanly without them).
NEEDS = {"encode": ("libpfm4",), "skid": ("elfutils", "capstone"), "funcs": ("elfutils",)}

Json = dict[str, Any]


def _binary() -> Path:
    path = helper_path()
    if path is None:
        raise HelperError(
            "pmuprof-helper is not built: PMU event encoding, PAUSE calibration and skid correction are off", BUILD_FIX
        )
    return path


def run_helper(
    args: Sequence[str], stdin: str | None = None, timeout: float = 300, allow_failure: bool = False, stall: bool = True
) -> Json:
    """Run ``pmuprof-helper ARGS`` and parse its JSON; raise HelperError on a crash or a top-level error."""
    argv = [str(_binary()), *args]
    try:
        res = proc.run(argv, timeout, input=stdin, stall=stall)
    except subprocess.TimeoutExpired as err:
        raise HelperError(
            f"pmuprof-helper {args[0]} {proc.timeout_text(err)}", "retry with fewer functions or a shorter duration"
        ) from err
    except OSError as err:
        raise HelperError(f"cannot run {argv[0]}: {err.strerror}", BUILD_FIX) from err
    try:
        data = json.loads(res.stdout) if res.stdout.strip() else None
    except ValueError as err:
        raise HelperError(f"pmuprof-helper {args[0]} printed invalid JSON ({err})", "rebuild: make -C native") from err
    if not isinstance(data, dict):
        why = res.stderr.strip().splitlines()[-1] if res.stderr.strip() else f"exit status {res.returncode}"
        raise HelperError(f"pmuprof-helper {args[0]} failed: {why}", "rebuild: make -C native")
    if res.returncode != 0 and not allow_failure:
        raise HelperError(f"pmuprof-helper {args[0]}: {data.get('error') or 'failed'}", _fix_for(args[0], data))
    return data


def _fix_for(command: str, data: Json) -> str:
    error = str(data.get("error") or "")
    if "built without" in error:  # "built without capstone: ...": that feature's packages
        return FEATURE_FIX.get(error.split("built without", 1)[1].split()[0].strip(":,()"), BUILD_FIX)
    if command in ("skid", "funcs"):
        return "pass the exact binary that was profiled (--binary PATH); it must be an x86-64 ELF file"
    if command == "count":
        return "check the pid is alive and that you may trace it (root or CAP_PERFMON)"
    return "see pmuprof-helper --help"


def features() -> dict[str, bool]:
    """{"libpfm4": bool, "elfutils": bool, "capstone": bool} for the built helper."""
    data = run_helper(["features"], timeout=30)
    return {name: bool(info.get("on")) for name, info in data.get("features", {}).items()}


def features_off() -> list[dict[str, str]]:
    """run.json ``features_off`` entries for helper features compiled out (or the helper missing)."""
    try:
        data = run_helper(["features"], timeout=30)
    except HelperError as err:
        return [{"feature": "native helper", "why": err.message, "fix": err.fix}]
    return [
        {
            "feature": f"helper {name}: {info.get('enables', '')}",
            "why": f"built without {name}",
            "fix": FEATURE_FIX.get(name, BUILD_FIX),
        }
        for name, info in sorted(data.get("features", {}).items())
        if not info.get("on")
    ]


def pmu_info() -> Json:
    """libpfm4 version, detected PMUs (honours LIBPFM_FORCE_PMU) and whether hardware cycles open here.

    Shape: {"libpfm": {"version", "api_version", "force_pmu", "error"}, "pmus": [{"name", "desc", "type",
    "events", "generic_counters", "fixed_counters"}], "core_pmu": str|None,
    "hardware_counters": {"cycles_open": bool, "error": str|None, "sysfs_cpu_pmu": bool, ...}}
    """
    return run_helper(["pmu"], timeout=30, allow_failure=True)


def core_pmu() -> str:
    """libpfm4's name for this CPU's core PMU (e.g. 'skx', 'amd64_fam19h_zen4'); "" when unknown."""
    try:
        return str(pmu_info().get("core_pmu") or "")
    except HelperError:
        return ""


def encode(names: Iterable[str]) -> list[Json]:
    """libpfm4 names → perf syntax: [{"name", "perf", "type", "config", "config1", "precise_ip", ...}
    or {"name", "error"}] in input order; raises only when libpfm4 is missing or every name fails."""
    names = list(names)
    if not names:
        return []
    data = run_helper(["encode", *names], timeout=30, allow_failure=True)
    if data.get("error"):
        raise HelperError(f"pmuprof-helper encode: {data['error']}", FEATURE_FIX["libpfm4"])
    return list(data.get("events", []))


def calibrate_pause(trials: int = 20000) -> Json:
    """PAUSE latency: {"cycles", "ns", "tsc_hz", "tsc_hz_source", "method": "rdtsc", "ticks_per_pause",
    "mariadb": {"my_cpu_relax_multiplier", ...}}; cycles are TSC ticks as MariaDB measures them."""
    return run_helper(["pause", "--trials", str(int(trials))], timeout=15)


def calibrate_pause_or_error() -> Json:
    """calibrate_pause(), or {"error": why} when the helper is missing or fails (a capture goes on)."""
    try:
        return calibrate_pause()
    except HelperError as err:
        return {"error": str(err)}


def skid(
    binary: str | Path,
    samples: Iterable[tuple[str, int, int]] = (),
    addresses: Iterable[tuple[int, int]] = (),
    exact_ip: bool = False,
    hot_only: bool = False,
    debug: str | Path | None = None,
) -> Json:
    """Skid-corrected histograms for (symbol, offset, count) samples and (vaddr, count) unnamed ones.

    Shape: {"binary", "build_id", "symbols": "symtab|dynsym|none", "exact_ip", "moved", "function_errors",
    "functions": [{"symbol", "requested", "start", "end", "samples", "moved", "ambiguous_samples",
    "misaligned_samples", "past_end_samples", "corrected_by_kind": {"pause": n, ...}, "instruction_count",
    "instructions": [{"address": "0x..", "offset", "text", "kind", "raw", "corrected", "ambiguous",
    "branch_target"}], "error"?}]}. Per-function problems (symbol not found, offsets past the end) are in
    each function's "error"; a missing or non-x86 binary raises HelperError.
    """
    lines = [f"{sym}\t{off:x}\t{cnt}" for sym, off, cnt in samples if "\t" not in sym and "\n" not in sym]
    lines += [f"0x{addr:x}\t{cnt}" for addr, cnt in addresses]
    args = ["skid", "--binary", str(binary)] + (["--exact"] if exact_ip else []) + (["--hot-only"] if hot_only else [])
    args += ["--debug", str(debug)] if debug else []
    data = run_helper(args, stdin="\n".join(lines) + "\n", allow_failure=True)
    if data.get("error"):
        raise HelperError(f"skid correction on {binary}: {data['error']}", _fix_for("skid", data))
    return data


def funcs(
    binary: str | Path, addrs: Iterable[int], file_offsets: bool = False, debug: str | Path | None = None
) -> Json:
    """Containing function of each address from .eh_frame (stripped binaries) and symbols.

    Shape: {"binary", "build_id", "symbols", "named_functions", "fde_functions", "addresses": [{"input",
    "vaddr", "start", "end", "size", "name", "name_offset"?, "contains_pause", "source": "eh_frame|symbol",
    "symbol"?, "error"?}]}.
    """
    args = (
        ["funcs", "--binary", str(binary)]
        + (["--offsets"] if file_offsets else [])
        + (["--debug", str(debug)] if debug else [])
    )
    stdin = "".join(f"0x{a:x}\n" for a in addrs)
    data = run_helper(args, stdin=stdin, allow_failure=True)
    if data.get("error"):
        raise HelperError(f"function lookup in {binary}: {data['error']}", _fix_for("funcs", data))
    return data

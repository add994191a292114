"""Host facts: CPU model and microarchitecture, kernel, NUMA nodes, perf version and permissions."""

from __future__ import annotations

import os
import platform
import re
import socket
import subprocess

from ...tools import proc
from .process import node_cpus

# (vendor, family, model) -> microarchitecture; PAUSE cycles are measured, these only name the CPU.
_INTEL = {
    (6, 0x4F): "bdx",
    (6, 0x56): "bdx",
    (6, 0x3D): "bdw",
    (6, 0x47): "bdw",
    (6, 0x4E): "skl",
    (6, 0x5E): "skl",
    (6, 0x8E): "skl",
    (6, 0x9E): "skl",
    (6, 0x55): "skx",
    (6, 0x7D): "icl",
    (6, 0x7E): "icl",
    (6, 0x6A): "icx",
    (6, 0x6C): "icx",
    (6, 0x8F): "spr",
    (6, 0xCF): "emr",
    (6, 0xAD): "gnr",
    (6, 0xAE): "gnr",
    (6, 0x97): "adl",
    (6, 0x9A): "adl",
    (6, 0xB7): "rpl",
    (6, 0xBA): "rpl",
    (6, 0xBF): "rpl",
}
_AMD = {0x17: "zen1/zen2", 0x19: "zen3/zen4", 0x1A: "zen5"}


def cpuinfo() -> dict:
    """First processor block of /proc/cpuinfo as typed fields."""
    info: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if not line.strip():
                    break
                key, _, value = line.partition(":")
                info[key.strip()] = value.strip()
    except OSError:
        pass

    def num(key: str) -> int | None:
        value = info.get(key, "")
        return int(value) if value.isdigit() else None

    return {
        "vendor": info.get("vendor_id", ""),
        "cpu_model": info.get("model name", ""),
        "family": num("cpu family"),
        "model": num("model"),
        "stepping": num("stepping"),
        "flags_hypervisor": "hypervisor" in info.get("flags", "").split(),
    }


def microarch(vendor: str, family: int | None, model: int | None, stepping: int | None) -> str:
    if vendor == "GenuineIntel" and family is not None and model is not None:
        name = _INTEL.get((family, model), "intel-unknown")
        if name == "skx" and stepping is not None and stepping >= 5:
            return "clx"  # Cascade Lake shares model 0x55 with Skylake-SP, told apart by stepping
        return name
    if vendor == "AuthenticAMD" and family is not None:
        base = _AMD.get(family, "amd-unknown")
        if family == 0x19:
            return "zen4" if model is not None and (0x10 <= model <= 0x1F or 0x60 <= model <= 0xAF) else "zen3"
        if family == 0x17:
            return "zen2" if model is not None and model >= 0x30 else "zen1"
        return base
    return "unknown"


def perf_version(perf: str | None) -> str | None:
    if not perf:
        return None
    try:
        out = proc.run([perf, "version"], timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"(\d+\.\d+[\w.\-]*)", out)
    return m.group(1) if m else out.strip() or None


def paranoid() -> int | None:
    try:
        with open("/proc/sys/kernel/perf_event_paranoid", encoding="ascii") as fh:
            return int(fh.read().strip())
    except (OSError, ValueError):
        return None


def hardware_pmu(perf: str | None) -> bool:
    """True when perf can really count cycles here (a VM without a vPMU says <not supported>)."""
    if not perf:
        return False
    try:
        res = proc.run([perf, "stat", "-x,", "-e", "cycles", "true"], timeout=20)
    except (OSError, subprocess.SubprocessError):
        return False
    for line in res.stderr.splitlines():
        fields = line.split(",")
        if len(fields) > 2 and fields[2].startswith("cycles"):
            return fields[0].strip().replace(".", "").isdigit()
    return False


def has_lbr() -> bool:
    """Whether the CPU PMU exposes Last Branch Record (perf --call-graph lbr): Intel's caps/branches."""
    for pmu in ("cpu", "cpu_core"):
        caps = f"/sys/bus/event_source/devices/{pmu}/caps/branches"
        try:
            with open(caps, encoding="ascii") as fh:
                if int(fh.read().strip() or 0) > 0:
                    return True
        except (OSError, ValueError):
            continue
    return False


def sysctl_int(path: str) -> int | None:
    try:
        with open(path, encoding="ascii") as fh:
            return int(fh.read().strip())
    except (OSError, ValueError):
        return None


def facts(perf: str | None) -> dict:
    cpu = cpuinfo()
    version = perf_version(perf)
    return {
        "hostname": socket.gethostname(),
        **cpu,
        "microarch": microarch(cpu["vendor"], cpu["family"], cpu["model"], cpu["stepping"]),
        "kernel": platform.release(),
        "nproc": os.cpu_count() or 1,
        "numa_nodes": {str(k): v for k, v in node_cpus().items()},
        "perf": perf,
        "perf_version": version,
        "perf_event_paranoid": paranoid(),
        "hardware_pmu": hardware_pmu(perf) if version else False,  # a perf that does not answer is not asked twice
        "is_root": os.geteuid() == 0,
        "zone_reclaim_mode": sysctl_int("/proc/sys/vm/zone_reclaim_mode"),
        "numa_balancing": sysctl_int("/proc/sys/kernel/numa_balancing"),
    }

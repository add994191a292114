"""Target processes: pid → exe, comm, threads, cgroup, CPU/NUMA placement; read from /proc only (no ptrace)."""

from __future__ import annotations

import os
from pathlib import Path

from ...errors import TargetError
from ...model.jsontypes import from_json
from ...model.run import Target
from ..mysql import discover
from ...tools import elf as elfinfo

MYSQL_COMMS = ("mysqld", "mariadbd")


def _read(path: str, default: str = "") -> str:
    try:
        with open(path, encoding="utf-8", errors="backslashreplace") as fh:
            return fh.read()
    except OSError:
        return default


def status_fields(pid: int) -> dict[str, str]:
    out = {}
    for line in _read(f"/proc/{pid}/status").splitlines():
        key, _, value = line.partition(":")
        out[key.strip()] = value.strip()
    return out


def is_alive(pid: int) -> bool:
    state = status_fields(pid).get("State", "")
    return bool(state) and not state.startswith(("Z", "X"))


_PF_KTHREAD = 0x00200000  # task flag of kernel threads (kthreadd, pid 2, included)


def is_kernel_thread(pid: int) -> bool:
    """From the task flags in /proc/PID/stat (field 9); kthreadd has no parent 2, so PPid cannot tell."""
    stat = _read(f"/proc/{pid}/stat")
    try:
        return bool(int(stat[stat.rindex(")") + 2 :].split()[6]) & _PF_KTHREAD)
    except (ValueError, IndexError):
        return False


def resolve_pid(pid: int) -> int:
    """Check a pid names a live user process; a thread id is mapped to its process with no error."""
    if pid <= 0:
        raise TargetError(f"pid {pid} is not a valid process id", "pass the server's pid, e.g. -p $(pidof mariadbd)")
    fields = status_fields(pid)
    if not fields:
        raise TargetError(f"no process with pid {pid}", "check the pid with `pidof mysqld mariadbd` or `ps -C mysqld`")
    if fields.get("State", "").startswith(("Z", "X")):
        raise TargetError(f"pid {pid} has exited (zombie)", "the server is not running; start it or pick another pid")
    if is_kernel_thread(pid):
        raise TargetError(
            f"pid {pid} is a kernel thread ({_read(f'/proc/{pid}/comm').strip()})",
            "pass the pid of a user process, e.g. -p $(pidof mariadbd)",
        )
    return int(fields.get("Tgid", pid))


def find_mysqld() -> list[int]:
    """All running mysqld / mariadbd processes (pids), oldest first."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and _read(f"/proc/{entry.name}/comm").strip() in MYSQL_COMMS:
            found.append(int(entry.name))
    return sorted(found)


def cgroup_of(pid: int) -> str | None:
    """The target's perf-usable cgroup (v2 unified or v1 perf_event), relative to its mount; None if root."""
    for line in _read(f"/proc/{pid}/cgroup").splitlines():
        hid, controllers, path = line.split(":", 2)
        usable_v2 = hid == "0" and controllers == "" and Path("/sys/fs/cgroup/cgroup.controllers").exists()
        usable_v1 = "perf_event" in controllers.split(",") and Path("/sys/fs/cgroup/perf_event").is_dir()
        if (usable_v2 or usable_v1) and path not in ("", "/"):
            return path.lstrip("/")
    return None


def numa_placement(pid: int, cpus_allowed: str) -> dict:
    """Which NUMA nodes the target may run on and where its memory pages are (from numa_maps)."""
    nodes = node_cpus()
    allowed = parse_cpulist(cpus_allowed)
    cpu_nodes = sorted(n for n, cpus in nodes.items() if parse_cpulist(cpus) & allowed)
    pages: dict[str, int] = {}
    for line in _read(f"/proc/{pid}/numa_maps").splitlines():
        for token in line.split()[2:]:
            if token.startswith("N") and "=" in token:
                node, _, count = token[1:].partition("=")
                if node.isdigit() and count.isdigit():
                    pages[node] = pages.get(node, 0) + int(count)
    return {"cpu_nodes": cpu_nodes, "memory_pages": pages, "nodes_on_host": len(nodes)}


def node_cpus() -> dict[int, str]:
    base = Path("/sys/devices/system/node")
    out = {}
    for node in sorted(base.glob("node[0-9]*")):
        out[int(node.name[4:])] = _read(str(node / "cpulist")).strip()
    return out


MAX_CPUS = 1 << 16  # Linux's NR_CPUS is at most 8192: a larger CPU number is not a CPU list's


def parse_cpulist(text: str) -> set[int]:
    """The CPUs of a list such as ``0-3,8`` (/proc's Cpus_allowed_list); parts that are not CPU numbers or
    ranges of them (a damaged run.json's) are left out."""
    cpus: set[int] = set()
    for part in text.strip().split(",") if isinstance(text, str) else ():
        lo, dash, hi = part.strip().partition("-")
        if not (lo.isascii() and lo.isdigit() and (not dash or (hi.isascii() and hi.isdigit()))):
            continue
        first, last = int(lo), int(hi) if dash else int(lo)
        if first <= last < MAX_CPUS:
            cpus.update(range(first, last + 1))
    return cpus


def describe(pid: int, label: str | None = None) -> Target:
    """Facts about one target for run.json."""
    fields = status_fields(pid)
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        exe = ""
    comm = _read(f"/proc/{pid}/comm").strip()
    cpus_allowed = fields.get("Cpus_allowed_list", "")
    facts = {
        "pid": pid,
        "label": label or comm,
        "comm": comm,
        "exe": exe.removesuffix(" (deleted)"),
        "threads": int(fields.get("Threads", "0") or 0),
        "cgroup": cgroup_of(pid),
        "cpus_allowed": cpus_allowed,
        "numa": numa_placement(pid, cpus_allowed),
        "is_mysqld": comm in MYSQL_COMMS,
        "maps": exec_maps(pid),
    }
    if comm in MYSQL_COMMS:  # which server this is: where it listens and its datadir (/proc only)
        facts.update(_server_place(pid))
    if exe.endswith(" (deleted)"):
        facts["exe_note"] = "the binary was replaced on disk after the server started; symbols may not match"
    binary = f"/proc/{pid}/exe"
    if os.path.exists(binary):
        summary = elfinfo.symbol_summary(Path(binary))
        facts["build_id"] = summary.pop("build_id", None)
        facts["symbols"] = summary
    return from_json(Target, facts)


def _server_place(pid: int) -> dict[str, str]:
    """A server process's endpoints and datadir, from its open sockets and command line ({} when unreadable)."""
    try:
        return {
            "endpoints": discover.listening(pid).words(),
            "datadir": str(discover.configured(pid).get("datadir") or ""),
        }
    except OSError:
        return {}


def exec_maps(pid: int) -> list[dict]:
    """Executable file mappings of a live process (read at capture start, from /proc)."""
    out = []
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="backslashreplace") as fh:
            for line in fh:
                parts = line.split(None, 5)
                if len(parts) == 6 and "x" in parts[1] and parts[5].startswith("/"):
                    lo, hi = (int(x, 16) for x in parts[0].split("-"))
                    out.append({"start": lo, "end": hi, "pgoff": int(parts[2], 16), "path": parts[5].strip()})
    except OSError:
        pass
    return out


def labels_for(pids: list[int]) -> dict[int, str]:
    """Process labels as the folder writes them: comm, or comm-pid when two targets share a name."""
    comms = {pid: _read(f"/proc/{pid}/comm").strip() or str(pid) for pid in pids}
    dupes = {c for c in comms.values() if list(comms.values()).count(c) > 1}
    return {pid: (f"{c}-{pid}" if c in dupes else c).replace(" ", "_") for pid, c in comms.items()}

"""Turn what the user brings (run directory, perf.data, perf script text, folded file) into a Profile."""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from ..model import rundir
from ..model.folded import load_folded
from ..model.perfscript import DEFAULT_TARGET_COMMS, FoldResult
from ..model.profile import Leaf, Profile

PERF_MAGIC = b"PERFILE2"


def sniff(path: Path) -> str:
    """'rundir' | 'perf.data' | 'perf-script' | 'folded'."""
    if path.is_dir():
        if rundir.is_run_dir(path) or (path / rundir.STACKS).is_file():
            return "rundir"
        raise InputError(f"{path}: a directory without run.json or stacks.folded",
                         "pass a pmuprof run directory, a perf.data, a perf script text or a folded file")
    if not path.is_file():
        raise InputError(f"{path}: no such file or directory", "check the path")
    with open(path, "rb") as fh:
        head = fh.read(65536)
    if not head.strip():
        raise InputError(f"{path}: the file is empty", "re-record; an empty capture has nothing to report")
    if head.startswith(PERF_MAGIC):
        return "perf.data"
    for line in head.decode("utf-8", "backslashreplace").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        if line[0] in " \t":
            return "perf-script"
    return "folded"


def load_input(path: Path | str, pids: tuple[int, ...] = (), comms: tuple[str, ...] = (),
               per_thread: bool = False) -> Profile:
    path = Path(path)
    kind = sniff(path)
    if kind == "rundir":
        profile = rundir.load_run_dir(path)
        return _restricted(profile, pids, comms)
    if kind == "folded":
        stacks, headers = load_folded(path)
        run = {"source": {"kind": "folded", "path": str(path), "headers": headers}, "warnings": []}
        return _restricted(Profile(stacks, run, source=str(path)), pids, comms)
    sibling = _sibling_run(path)
    names = {t["pid"]: t["label"] for t in sibling.get("targets", [])}
    if not pids and not comms:
        pids = tuple(names)
    comms = comms or (() if pids else DEFAULT_TARGET_COMMS)
    if kind == "perf.data":
        return _from_perf_data(path, pids, comms, per_thread, sibling, names)
    from ..tools.native.fold import fold_file  # the C folder when built, else the Python Folder
    result = fold_file(path, pids, comms, per_thread, names)
    return _from_fold(result, path, "perf-script", sibling, comms)


def _from_perf_data(path: Path, pids, comms, per_thread, sibling: dict, names) -> Profile:
    from ..tools.perf import read as script  # perf.data needs perf: the one process report may start
    from ..paths import perf_path
    perf = perf_path()
    if not perf:
        raise InputError(f"{path}: reading a perf.data needs perf, which is not installed",
                         "apt-get install linux-perf, or pass the folded file / perf script text instead")
    events = script.recorded_events(perf, path)
    result, argv = script.fold_perf_data(perf, path, pids, () if pids else comms, per_thread, names)
    profile = _from_fold(result, path, "perf.data", sibling, comms)
    if not any("CALLCHAIN" in e.get("sample_type", "") for e in events):
        profile.run["warnings"].append("perf.data was recorded without call graphs (-g): stacks are one frame deep")
    profile.run.setdefault("record", {})["events_recorded"] = [e["name"] for e in events]
    profile.run["record"].setdefault("event_recorded", events[0]["name"].split(":")[0] if events else "unknown")
    profile.run.setdefault("host", {}).update({k: v for k, v in script.header(perf, path).items()
                                               if k not in profile.run["host"]})
    profile.run["script"] = {"argv": argv}
    return profile


def _from_fold(result: FoldResult, path: Path, kind: str, sibling: dict, comms) -> Profile:
    if not result.kept:
        why = f" of {', '.join(comms)}" if comms else ""
        raise InputError(f"{path}: no samples{why} in this {kind}",
                         "check the recording covers the target (use --pid/--comm to choose processes)")
    run = dict(sibling) if sibling else {"warnings": []}
    run["source"] = {"kind": kind, "path": str(path)}
    run["warnings"] = list(run.get("warnings", [])) + [w for w in result.warnings() if w not in run.get("warnings", [])]
    rec = run.setdefault("record", {})
    rec["samples"] = result.kept
    if result.events and "event_recorded" not in rec:
        rec["event_recorded"] = result.events.most_common(1)[0][0]
    leaves = tuple(Leaf(d, s, o, c) for (d, s, o), c in sorted(result.leaves.items()))
    mysql = rundir.read_json(path.parent / rundir.MYSQL, None) if sibling else None
    counters = rundir.read_json(path.parent / rundir.COUNTERS, {}) if sibling else {}
    return Profile(dict(result.stacks), run, counters or {}, mysql, leaves, str(path))


def _sibling_run(path: Path) -> dict:
    """A perf.data or script text inside a run directory reuses that run's targets and facts."""
    return rundir.read_json(path.parent / rundir.RUN_JSON, {}) or {}


def _restricted(profile: Profile, pids: tuple[int, ...], comms: tuple[str, ...]) -> Profile:
    if not pids and not comms:
        return profile
    wanted = {t["label"] for t in profile.run.get("targets", []) if t.get("pid") in pids}
    roots = [r for r in profile.processes()
             if r in wanted or r in comms or r.rsplit("-", 1)[0] in comms
             or (r.rsplit("-", 1)[-1].isdigit() and int(r.rsplit("-", 1)[-1]) in pids)]
    if not roots:
        raise InputError(f"{profile.source}: none of the chosen processes are in this profile",
                         f"processes present: {', '.join(profile.processes()[:8])}")
    return profile.restrict(roots)

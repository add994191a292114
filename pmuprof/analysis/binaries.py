"""Resolve stage: find each binary the samples ran in by build-id, as perf and gdb find them.

Order for a binary: ``--binary`` files, ``--symfs DIR`` + path, the recorded path, perf's build-id
cache (~/.debug/.build-id), debuginfod. A file whose build-id differs from the recorded one is never
used. Names for a binary without .symtab come from a separate debug file: /usr/lib/debug/.build-id,
.gnu_debuglink next to the binary or under /usr/lib/debug, then debuginfod (DEBUGINFOD_URLS).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Iterable, Mapping

from ..model.analysis import Binary
from ..packages import apt_install
from ..tools import proc
from ..tools.elf import ElfFile, Ident, ident

DEBUGINFOD_TIMEOUT_S = 20.0
DEBUG_ROOT = Path("/usr/lib/debug")
UNREACHABLE = (
    "connection refused",
    "couldn't resolve",
    "could not resolve",
    "timed out",
    "timeout",
    "couldn't connect",
    "network is unreachable",
)


@dataclass(frozen=True)
class Lookup:
    """Where to look for binaries and debug files besides their recorded paths."""

    symfs: Path | None = None
    binaries: tuple[Path, ...] = ()
    cache: Path = Path.home() / ".debug"
    debuginfod: bool = True

    def debug_roots(self) -> tuple[Path, ...]:
        roots = [_under(self.symfs, DEBUG_ROOT)] if self.symfs else []
        return tuple(dict.fromkeys(roots + [DEBUG_ROOT]))


def _under(root: Path | None, path: str | Path) -> Path:
    return Path(path) if root is None else root / str(path).lstrip("/")


class Debuginfod:
    """elfutils' debuginfod-find for one resolve pass: asked only when DEBUGINFOD_URLS is set, and not
    again after it was unreachable once (a report never waits on a dead server for every binary)."""

    def __init__(self, enabled: bool) -> None:
        self.urls = os.environ.get("DEBUGINFOD_URLS", "").strip() if enabled else ""
        self.down = ""  # the problem line once the server was unreachable

    def fetch(self, kind: str, build_id: str) -> Path | str | None:
        """The file, a problem line, or None when debuginfod is not configured."""
        if not self.urls:
            return None
        if self.down:
            return self.down
        got = _debuginfod_find(kind, build_id, self.urls)
        if isinstance(got, str) and " is unreachable" in got:
            self.down = got
        return got


def resolve(
    wanted: Mapping[str, int],
    recorded: Mapping[str, str],
    lookup: Lookup,
    builds: Mapping[str, tuple[str, ...]] | None = None,
) -> tuple[Binary, ...]:
    """One Binary per file-backed DSO path in ``wanted`` (path -> samples), most samples first; one per
    build when ``builds`` (path -> the build-ids the targets ran from it) names several for a path."""
    client = Debuginfod(lookup.debuginfod)
    out = []
    for path, samples in sorted(wanted.items(), key=lambda kv: (-kv[1], kv[0])):
        if path.startswith("/"):
            for build_id in (builds or {}).get(path) or (recorded.get(path),):
                out.append(find(path, build_id, samples, lookup, client))
    return tuple(out)


def key(binary: Binary) -> tuple[str, str | None]:
    """What tells two binaries apart: the recorded path and build-id (never the file name alone)."""
    return binary.path, binary.build_id or binary.file_build_id


def shared_paths(binaries: Iterable[Binary]) -> dict[str, tuple[str, ...]]:
    """Paths that ran as several builds in this recording -> their build-ids (two processes, one path)."""
    ids: dict[str, set[str]] = {}
    for b in binaries:
        ids.setdefault(b.path, set()).add(str(key(b)[1]))
    return {p: tuple(sorted(v)) for p, v in ids.items() if len(v) > 1}


@dataclass(frozen=True)
class Mapped:
    """What one kept process mapped: its exe's recorded build-id and its file-backed paths (None: not
    recorded, e.g. a bare perf.data's processes)."""

    paths: frozenset[str] | None = None
    exe: str = ""
    build_id: str | None = None

    def holds(self, binary: Binary) -> bool:
        if self.paths is None or binary.path not in self.paths:
            return False
        return not (binary.path == self.exe and self.build_id and key(binary)[1] != self.build_id)


def owners(
    binaries: Iterable[Binary], mapped: Mapping[str, Mapped]
) -> tuple[dict[str, dict[str, Binary]], dict[str, str]]:
    """Per process root (``""``: any root not in ``mapped``), its found binaries by file name (what a
    raw label ``[name@0x…]`` names); and per file name that stands for several binaries nothing tells
    apart, which ones they are.

    A process whose mappings were recorded (a capture's target) gets the binaries it mapped; any other
    name, and a process without recorded mappings, gets the one binary of that name, else the one of
    that name holding leaf samples; never a guess between two."""
    found = [b for b in binaries if b.file]
    named: dict[str, list[Binary]] = {}
    for b in found:
        named.setdefault(os.path.basename(b.path), []).append(b)
    common: dict[str, Binary] = {}
    unclear: dict[str, str] = {}
    for name, cands in named.items():
        distinct = list({key(b): b for b in cands}.values())
        busy = [b for b in distinct if b.samples]
        if len(distinct) == 1 or len(busy) == 1:
            common[name] = distinct[0] if len(distinct) == 1 else busy[0]
        else:
            unclear[name] = ", ".join(f"{b.path} ({key(b)[1] or 'no build-id'})" for b in distinct)
    out = {root: {**common, **{os.path.basename(b.path): b for b in found if m.holds(b)}} for root, m in mapped.items()}
    out[""] = common
    return out, unclear


def find(path: str, build_id: str | None, samples: int, lookup: Lookup, client: Debuginfod | None = None) -> Binary:
    """The file for one recorded path (see the module docstring for the order), or why there is none."""
    client = client or Debuginfod(lookup.debuginfod)
    mismatch: list[str] = []
    refused: list[str] = []
    for file, via in _candidates(path, build_id, lookup, client):
        found = ident(file, refused)
        if found is None:
            continue
        if build_id and found.build_id and found.build_id != build_id:
            mismatch.append(f"{file} has build-id {found.build_id}")
            continue
        verified = bool(build_id and found.build_id == build_id) if build_id else None
        return _found(path, build_id, file, via, found, verified, samples, lookup, client)
    if mismatch:
        problem = (
            f"{path}: {'; '.join(mismatch[:2])}, not the {build_id} that was recorded (the binary changed "
            f"since the recording) — pass --binary with the file that ran, or --symfs DIR holding it"
        )
    elif refused:
        problem = f"{refused[0]} — pass --binary PATH or --symfs DIR with the file that ran"
    else:
        problem = f"{path}: not found here — pass --binary PATH or --symfs DIR (a copy of the recording host's files)"
    return Binary(path=path, build_id=build_id, found_via="not found", samples=samples, problem=problem)


def _candidates(path: str, build_id: str | None, lookup: Lookup, client: Debuginfod) -> Iterable[tuple[Path, str]]:
    base = os.path.basename(path)
    for given in lookup.binaries:
        if given.name == base or build_id:
            yield given, "--binary"
    if lookup.symfs is not None:
        yield _under(lookup.symfs, path), "--symfs"
    yield Path(path), "recorded path"
    if build_id:
        yield lookup.cache / ".build-id" / build_id[:2] / build_id[2:] / "elf", "perf build-id cache"
        got = client.fetch("executable", build_id)
        if isinstance(got, Path):
            yield got, "debuginfod"


def _found(
    path: str,
    build_id: str | None,
    file: Path,
    via: str,
    found: Ident,
    verified: bool | None,
    samples: int,
    lookup: Lookup,
    client: Debuginfod,
) -> Binary:
    debug, problem = (None, "")
    if not found.symtab and found.build_id:
        debug, problem = _debuginfo(file, found, lookup, client)
    symbols = "symtab" if found.symtab else ("debuginfo" if debug else _dynsym_or_none(file))
    return Binary(
        path=path,
        build_id=build_id,
        file=str(file),
        found_via=via,
        file_build_id=found.build_id,
        verified=verified,
        debuginfo=str(debug) if debug else None,
        symbols=symbols,
        samples=samples,
        problem=problem,
        server_version=found.server_version or "",
    )


def _dynsym_or_none(file: Path) -> str:
    try:
        return "dynsym" if ElfFile(file).symbols(".dynsym") else "none"
    except (OSError, ValueError, IndexError):
        return "none"


def _debuginfo(file: Path, found: Ident, lookup: Lookup, client: Debuginfod) -> tuple[Path | None, str]:
    """A separate debug file with the same build-id, and a problem line when debuginfod failed."""
    bid = str(found.build_id)
    cands = [root / ".build-id" / bid[:2] / f"{bid[2:]}.debug" for root in lookup.debug_roots()]
    if found.debuglink:
        parent = str(file.parent)
        cands += [file.parent / found.debuglink, file.parent / ".debug" / found.debuglink]
        cands += [root / parent.lstrip("/") / found.debuglink for root in lookup.debug_roots()]
    for cand in cands:
        info = ident(cand)
        if info is not None and info.build_id == bid and info.symtab:
            return cand, ""
    got = client.fetch("debuginfo", bid)
    if isinstance(got, Path):
        info = ident(got)
        if info is not None and info.build_id == bid and info.symtab:
            return got, ""
    return None, got if isinstance(got, str) else ""


def _debuginfod_find(kind: str, build_id: str, urls: str) -> Path | str:
    """A file from debuginfod (elfutils' debuginfod-find), or a problem line."""
    tool = shutil.which("debuginfod-find")
    if tool is None:
        return f"DEBUGINFOD_URLS is set but debuginfod-find is not installed — {apt_install('debuginfod')}"
    try:
        res = proc.run([tool, kind, build_id], DEBUGINFOD_TIMEOUT_S, stall=False)  # waits on the network
    except OSError as err:
        return f"cannot run {tool}: {err.strerror or err}"
    except subprocess.TimeoutExpired:
        return f"debuginfod ({urls}) did not answer within {DEBUGINFOD_TIMEOUT_S:.0f} s — check DEBUGINFOD_URLS"
    if res.returncode == 0 and res.stdout.strip() and Path(res.stdout.strip()).is_file():
        return Path(res.stdout.strip())
    why = (res.stderr.strip().splitlines() or [f"exit status {res.returncode}"])[-1][:200]
    if any(word in why.lower() for word in UNREACHABLE):
        return f"debuginfod ({urls}) is unreachable: {why} — check DEBUGINFOD_URLS and the network"
    return f"debuginfod ({urls}) has no {kind} for build-id {build_id}: {why}"

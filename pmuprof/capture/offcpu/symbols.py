"""Name the addresses of BPF stacks: kernel ones from /proc/kallsyms, user ones via /proc/PID/maps + the binaries."""

from __future__ import annotations

import bisect
from collections import defaultdict
from pathlib import Path
from collections.abc import Callable, Iterable, Mapping, Sequence

from ...errors import PmuprofError
from ...model.labels import INLINE_SUFFIX, KERNEL_SUFFIX, UNKNOWN, clean, dso_base, frame_label, function_label
from ...model.run import FileMap
from ...tools.elf import ident

# funcs(binary, file offsets, file_offsets=True) -> the helper's JSON (tools.native.helper.funcs)
Funcs = Callable[..., dict]
KERNEL_UNKNOWN = frame_label(UNKNOWN, "[kernel.kallsyms]")
DEBUG_ROOT = Path("/usr/lib/debug/.build-id")  # distro debug packages (libc6-dbg, mariadb-server-core-dbgsym)
MAX_KERNEL_FUNCTION = 1 << 20  # kallsyms has no sizes: an address this far past a symbol is not in it
# Frames of the tracer itself (the BPF program and the tracepoint call), leafward of the scheduler.
_SCHEDULER = "__schedule"


class KernelSymbols:
    """/proc/kallsyms text symbols (names need root: without it every address reads 0)."""

    def __init__(self, text: str) -> None:
        rows = []
        for line in text.splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[1] in "tTwW" and parts[0].strip("0"):
                rows.append((int(parts[0], 16), parts[2]))
        rows.sort()
        self.addrs = [a for a, _ in rows]
        self.names = [n for _, n in rows]

    @classmethod
    def read(cls, path: str = "/proc/kallsyms") -> KernelSymbols:
        try:
            return cls(Path(path).read_text(errors="replace"))
        except OSError:
            return cls("")

    def __bool__(self) -> bool:
        return bool(self.addrs)

    def name(self, addr: int) -> str | None:
        i = bisect.bisect_right(self.addrs, addr) - 1
        if i < 0 or addr - self.addrs[i] > MAX_KERNEL_FUNCTION:
            return None
        return self.names[i]

    def frames(self, addrs: Sequence[int]) -> tuple[str, ...]:
        """A BPF kernel stack (leaf first) as folded frames, root first, from the scheduler down.

        Frames leafward of ``__schedule`` are the tracer's own (BPF program, tracepoint); return
        addresses are looked up one byte back so a call at a function's end names its caller.
        """
        names = [self.name(a if i == 0 else a - 1) for i, a in enumerate(addrs)]
        if _SCHEDULER in names:
            names = names[names.index(_SCHEDULER) + 1 :]
        return tuple(clean(n) + KERNEL_SUFFIX if n else KERNEL_UNKNOWN for n in reversed(names))


def _find_map(maps: Sequence[FileMap], starts: list[int], addr: int) -> FileMap | None:
    i = bisect.bisect_right(starts, addr) - 1
    return maps[i] if i >= 0 and addr < maps[i].end else None


# [(pid, file offset, path)] -> [(name perf prints or "", inlined calls innermost first)], or None
Names = Callable[[Sequence[tuple[int, int, str]]], "list[tuple[str, tuple[str, ...]]] | None"]


class UserSymbols:
    """User addresses of each process named from its executable mappings and the mapped files.

    Names come from ``names`` (pmuprof-perfdata --symbolize: the symbol perf prints, demangled as perf
    does, and the calls DWARF says are inlined there, as ``name_[i]`` frames), so a function is named
    alike on and off the CPU; where it has none, pmuprof-helper funcs names the code by its .eh_frame
    function (``[dso+0xSTART]``). An address in no file mapping is ``[unknown]``, a binary that cannot
    be read gives ``[dso]``.
    """

    def __init__(self, maps: Mapping[int, Sequence[FileMap]], funcs: Funcs | None, names: Names | None = None) -> None:
        self.maps = {pid: sorted(m, key=lambda x: x.start) for pid, m in maps.items()}
        self.starts = {pid: [m.start for m in ms] for pid, ms in self.maps.items()}
        self.funcs = funcs
        self.names = names
        self.labels: dict[tuple[int, int], tuple[str, ...]] = {}  # frames root first: the function, its inlined calls
        self.problems: list[str] = []

    def resolve(self, wanted: Iterable[tuple[int, int]]) -> None:
        """Name (pid, lookup address) pairs: one symbolizer call, one helper call per binary for the rest."""
        by_file: dict[str, dict[int, list[tuple[int, int]]]] = defaultdict(lambda: defaultdict(list))
        for pid, addr in set(wanted) - self.labels.keys():
            fmap = _find_map(self.maps.get(pid, ()), self.starts.get(pid, []), addr)
            if fmap is None:
                self.labels[(pid, addr)] = (UNKNOWN,)
                continue
            by_file[fmap.path][addr - fmap.start + fmap.pgoff].append((pid, addr))
        named = self._symbolize(by_file)
        for path, offsets in by_file.items():
            rest = sorted(off for off in offsets if (path, off) not in named)
            found = self._lookup(path, rest) if rest else {}
            for offset, keys in offsets.items():
                frames = named.get((path, offset)) or (found.get(offset) or frame_label(UNKNOWN, path),)
                for key in keys:
                    self.labels[key] = frames

    def _symbolize(
        self, by_file: Mapping[str, Mapping[int, list[tuple[int, int]]]]
    ) -> dict[tuple[str, int], tuple[str, ...]]:
        """(path, offset) -> frames root first, for the offsets the symbolizer has a name for."""
        if self.names is None:
            return {}
        queries = [(keys[0][0], off, path) for path, offsets in by_file.items() for off, keys in offsets.items()]
        answers = self.names(queries)
        if answers is None:
            self.problems.append("pmuprof-perfdata --symbolize did not run: off-CPU frames named by pmuprof-helper")
            return {}
        out = {}
        for (_, off, path), (name, inlined) in zip(queries, answers):
            if name:
                out[(path, off)] = (clean(name),) + tuple(clean(n) + INLINE_SUFFIX for n in reversed(inlined))
        return out

    def _lookup(self, path: str, offsets: list[int]) -> dict[int, str]:
        if self.funcs is None:
            return {}
        try:
            data = self.funcs(path, offsets, file_offsets=True, debug=debug_file(path))
        except (PmuprofError, OSError) as err:
            self.problems.append(f"{path}: {err}")
            return {}
        out: dict[int, str] = {}
        base = dso_base(path)
        for entry in data.get("addresses", []):
            if entry.get("display"):
                label = clean(entry["display"])
            elif "start" in entry:
                label = function_label(base, int(entry["start"], 16), bool(entry.get("contains_pause")))
            else:
                continue
            out[int(entry["input"], 16)] = label
        return out

    def frames(self, pid: int, addrs: Sequence[int]) -> tuple[str, ...]:
        """A BPF user stack (leaf first) as folded frames, root first (resolve() first)."""
        return tuple(f for a in reversed(lookup_addresses(addrs)) for f in self.labels.get((pid, a), (UNKNOWN,)))


def debug_file(path: str) -> Path | None:
    """The distro's separate debug file for this binary (same build-id), when installed.

    Only /usr/lib/debug/.build-id: the report's binary lookup (analysis/binaries) knows more places.
    """
    found = ident(Path(path))
    if found is None or not found.build_id or found.symtab:
        return None
    cand = DEBUG_ROOT / found.build_id[:2] / f"{found.build_id[2:]}.debug"
    return cand if cand.is_file() else None


def lookup_addresses(addrs: Sequence[int]) -> list[int]:
    """Where to look each frame up: the leaf as is, return addresses one byte back (inside the call)."""
    return [a if i == 0 else a - 1 for i, a in enumerate(addrs)]

"""analysis.json as frozen types: processes kept, binaries found, unnamed functions, skid hot spots, stack quality."""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Mapping

from .run import FeatureOff


@dataclass(frozen=True)
class Process:
    """A process of the input: kept as a target of the report, or left out (and how to choose it)."""

    label: str
    pid: int | None = None
    comm: str = ""
    binary: str = ""
    samples: int = 0
    kept: bool = True


@dataclass(frozen=True)
class Binary:
    """A binary the samples ran in, and the file the analysis read for it."""

    path: str  # as the recording names it
    build_id: str | None = None  # recorded (perf.data build-id table / run.json); None: not recorded
    file: str | None = None  # the file read (None: not found)
    found_via: str = ""  # recorded path | --binary | --symfs | build-id cache | not found
    file_build_id: str | None = None
    verified: bool | None = None  # build-ids equal; None when nothing was recorded to compare with
    debuginfo: str | None = None  # separate debug file that named frames (build-id dir, debuglink, debuginfod)
    symbols: str = ""  # symtab | dynsym | debuginfo | none
    samples: int = 0  # samples whose leaf is in this binary
    problem: str = ""  # one line with its fix: missing, build-id mismatch, debuginfod unreachable
    server_version: str = ""  # the version a server binary carries ("11.4.5-MariaDB"); "" when none was read


@dataclass(frozen=True)
class UnnamedFunction:
    """Unnamed code grouped into one .eh_frame function of a binary without symbols for it."""

    label: str
    binary: str
    start: str
    end: str | None = None
    contains_pause: bool = False
    build_id: str | None = None
    self: int = 0
    inclusive: int = 0
    called_from: tuple[str, ...] = ()


@dataclass(frozen=True)
class Instruction:
    address: str
    offset: int
    text: str
    kind: str = ""  # "" | pause | fence | lfence | lock | xchg | serialize | rdtsc | lock-fence | xchg-store
    raw: int = 0
    corrected: int = 0
    ambiguous: bool = False


@dataclass(frozen=True)
class SkidFunction:
    """One function's instructions with raw and skid-corrected sample counts."""

    symbol: str
    binary: str
    build_id: str | None = None
    start: str | None = None
    end: str | None = None
    samples: int = 0
    moved: int = 0
    ambiguous_samples: int = 0
    corrected_by_kind: Mapping[str, int] = field(default_factory=dict)
    instructions: tuple[Instruction, ...] = ()
    elf_symbol: str = ""
    error: str = ""


@dataclass(frozen=True)
class FenceSite:
    """A function's skid-corrected samples on full fences (the forms analysis/skid.py lists)."""

    function: str
    binary: str
    samples: int = 0
    share: float = 0.0  # of all the profile's samples
    forms: tuple[str, ...] = ()  # the fence instructions, hottest first


@dataclass(frozen=True)
class SkidSummary:
    """Shares (0–1) of all samples on PAUSE, fences and locked ops after correction (lower bounds)."""

    pause_share: float = 0.0
    fence_share: float = 0.0
    lock_share: float = 0.0
    moved_share: float = 0.0
    samples_total: int = 0
    samples_corrected: int = 0
    moved: int = 0
    ambiguous: int = 0
    functions_corrected: int = 0
    fences: tuple[FenceSite, ...] = ()  # hottest first; only functions with samples on a full fence


@dataclass(frozen=True)
class StackQuality:
    """What is wrong with the stacks, as three separate conditions with their shares of the samples.

    unnamed: leaf in a known binary but with no name (stripped binary or missing debuginfo);
    truncated: the outermost user frame is not a thread entry (dwarf stack copy too short, or frames
    lost without frame pointers); no_frame_pointers: target binaries compiled without them;
    unresolved_kernel: leaf in kernel code this host cannot name (never counted as unnamed).
    """

    process: str = ""
    call_graph: str = ""
    samples: int = 0
    unnamed_share: float = 0.0
    unnamed_binaries: tuple[str, ...] = ()
    unnamed_functions: int = 0
    pause_functions_hot: int = 0
    truncated_share: float = 0.0
    shallow_share: float = 0.0  # stacks of at most two frames below the process root
    no_frame_pointers: tuple[str, ...] = ()
    unresolved_kernel_share: float = 0.0  # leaf in kernel code no kallsyms here names (another boot's kernel)


@dataclass(frozen=True)
class Analysis:
    reader_argv: tuple[str, ...] = ()  # the command that read the samples (perf script ...), when one ran
    processes: tuple[Process, ...] = ()
    selection: str = ""  # how the kept processes were chosen, and how to choose others
    binaries: tuple[Binary, ...] = ()
    unnamed: tuple[UnnamedFunction, ...] = ()
    skid_functions: tuple[SkidFunction, ...] = ()
    skid: SkidSummary | None = None
    quality: tuple[StackQuality, ...] = ()  # one per kept process
    warnings: tuple[str, ...] = ()
    features_off: tuple[FeatureOff, ...] = ()
    # samples whose callers a frame-pointer walk skips under a library leaf were put back from the capture's
    # recovered-callers.tsv (model/callers.py); 0 when there was none, or none matched
    recovered_callers: int = 0

    def quality_of(self, process: str) -> StackQuality | None:
        return next((q for q in self.quality if q.process == process), None)

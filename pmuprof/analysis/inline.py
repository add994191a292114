"""Inline frames: why a perf.data's reading gave user frames none (the analysis's feature off), and whether
reading it again could add them."""

from __future__ import annotations

from collections.abc import Sequence

from ..model.analysis import Analysis
from ..model.run import FeatureOff
from ..packages import PERFDATA, apt_install
from ..tools.native.perfdata import expands_inline
from ..tools.perf.read import DECLINED

INLINE_FEATURE = "inline frames (DWARF inline chains: which latch an inlined acquirer takes)"
DECLINED_WHY = "pmuprof-perfdata declined this perf.data"
BUILD_FIX = (
    f"build pmuprof-perfdata ({apt_install(*PERFDATA)}; make -C native) and report again: a run "
    "directory's perf.data is read again when its binaries are installed here"
)


def inline_off(reader_argv: Sequence[str], warnings: Sequence[str] = ()) -> list[FeatureOff]:
    """Inline frames, when the command that read a perf.data gave user frames none: perf script (the native
    reader not built, declining the file (its note among ``warnings``), or --symfs) or PMUPROF_NO_INLINE. A
    binary with DWARF then splits no inlined acquirer's waits: the latch table says "A or B" where addr2line
    -i names one latch."""
    if not reader_argv or expands_inline(reader_argv):
        return []
    if "script" not in reader_argv:
        return [FeatureOff(INLINE_FEATURE, "PMUPROF_NO_INLINE is set", "unset PMUPROF_NO_INLINE and report again")]
    if any(w.startswith(DECLINED) for w in warnings):
        why = f"{DECLINED_WHY} (the warnings say why) and perf script, which names no inlined call, read it"
        fix = "pmuprof-perfdata reads frame-pointer call graphs (the capture's default) of files perf wrote whole"
        return [FeatureOff(INLINE_FEATURE, why, fix)]
    why = "perf.data was read through perf script, which names no inlined call" + (
        " (--symfs: only perf script reads binaries from elsewhere)"
        if any(a.startswith("--symfs") for a in reader_argv)
        else ""
    )
    return [FeatureOff(INLINE_FEATURE, why, BUILD_FIX)]


def reader_declined(analysis: Analysis) -> bool:
    """The analysis says pmuprof-perfdata declined the perf.data: reading it again gives no inline frames."""
    return any(f.feature == INLINE_FEATURE and f.why.startswith(DECLINED_WHY) for f in analysis.features_off)

"""Read a perf.data with perf: what it recorded (evlist, header, build-ids) and its folded stacks."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

from ...errors import InputError, PerfError
from ...model.counters import event_name
from ...model.perfscript import FoldResult
from ...model.run import Record
from ...packages import apt_install
from .. import proc
from ..native.fold import fold_perf_script_process
from ..native.perfdata import PerfdataFallback, fold_perf_data_native, inline_wanted, perfdata_argv, perfdata_path
from . import argv as perfcmd, parse as perfparse, repair

TIMEOUT_S = 120  # evlist, header and buildid-list read only the file's header
DECLINED = "read through perf script: pmuprof-perfdata declined the file"  # the note's start (analysis/inline.py)


@dataclass(frozen=True)
class Recording:
    """What a perf.data says about itself, before any sample is read."""

    events: tuple[dict, ...]  # [{name, type, config, sample_type}]
    header: dict  # hostname, kernel, perf_version, cpu_model, cmdline, nproc, captured_on
    build_ids: dict  # dso path -> build-id (perf's build-id table)

    @property
    def call_graph(self) -> str:
        """fp | dwarf | lbr | "" (no call chains), from the sampling flags of the first event."""
        flags = self.events[0].get("sample_type", "") if self.events else ""
        if "STACK_USER" in flags:
            return "dwarf"
        if "BRANCH_STACK" in flags and "CALLCHAIN" in flags:
            return "lbr"
        return "fp" if "CALLCHAIN" in flags else ""

    @property
    def timed(self) -> bool:
        """Every sampling event recorded each sample's time (perf script -F time can print it)."""
        flags = [e.get("sample_type", "") for e in self.events if not e["name"].startswith("dummy")]
        return bool(flags) and all("TIME" in f.split("|") for f in flags)

    @property
    def event(self) -> str:
        names = [event_name(e["name"]) for e in self.events if not e["name"].startswith("dummy")]
        return names[0] if names else "unknown"

    @property
    def frequency(self) -> int | None:
        """The rate perf sampled the first event at (Hz; None for a period, -c, or when not said)."""
        rates = [e.get("sample_freq") for e in self.events if not e["name"].startswith("dummy")]
        return rates[0] if rates else None


def recorded_rate(record: Record, rec: Recording) -> tuple[Record, tuple[str, ...]]:
    """``record`` with the sampling rate perf used, read from the recording, and the note saying so: perf
    lowers -F to kernel.perf_event_max_sample_rate (a warning on its stderr only), so -F 999 may sample at
    100 Hz; the time a sample stands for is 1/rate. The asked rate is kept beside it (``frequency_requested``)."""
    used, asked = rec.frequency, record.frequency_requested or record.frequency
    if used is None or asked is None or used == record.frequency:
        return record, ()
    return replace(record, frequency=used, frequency_requested=asked), (
        f"perf sampled at {used} Hz, not the {asked} Hz asked: the kernel's cap "
        f"(kernel.perf_event_max_sample_rate) was lower and perf throttled to it; times are counted at {used} Hz",
    )


def _run(argv: list[str], timeout: float = TIMEOUT_S) -> subprocess.CompletedProcess:
    try:
        return proc.run(argv, timeout)
    except OSError as err:
        raise PerfError(
            f"cannot run {argv[0]}: {err.strerror or err}",
            f"{apt_install('perf')}, or give report a folded / perf script file",
        ) from err
    except subprocess.TimeoutExpired as err:
        raise PerfError(
            f"{argv[0]} {argv[1]} {proc.timeout_text(err)}: stopped",
            "check the perf binary (PMUPROF_PERF) and the file",
        ) from err


def recorded_events(perf: str, data: Path) -> list[dict]:
    res = _run(perfcmd.evlist_argv(perf, data))
    if res.returncode != 0:
        raise InputError(
            f"{data}: perf cannot read this file ({_first(res.stderr)})",
            "the perf.data is corrupt or truncated; re-record, or pass its perf script text",
        )
    return perfparse.parse_evlist(res.stdout)


def header(perf: str, data: Path) -> dict:
    """A few facts from the perf.data header (host, CPU, perf version, command line)."""
    res = _run(perfcmd.header_argv(perf, data))
    facts: dict[str, str] = {}
    for line in res.stdout.splitlines():
        if line.startswith("# ") and " : " in line:
            key, _, value = line[2:].partition(" : ")
            facts[key.strip()] = value.strip()
    keep = {
        "hostname": "hostname",
        "os release": "kernel",
        "perf version": "perf_version",
        "cpudesc": "cpu_model",
        "cmdline": "cmdline",
        "nrcpus avail": "nproc",
        "captured on": "captured_on",
    }
    return {out: facts[k] for k, out in keep.items() if k in facts}


def build_ids(perf: str, data: Path, hits: bool = False) -> dict[str, str]:
    """dso path -> build-id from the perf.data's build-id table (empty when perf wrote none); ``hits``: only
    the DSOs samples fell in."""
    res = _run(perfcmd.buildid_list_argv(perf, data, hits))
    return perfparse.parse_buildid_list(res.stdout) if res.returncode == 0 else {}


def describe(perf: str, data: Path) -> Recording:
    return Recording(tuple(recorded_events(perf, data)), header(perf, data), build_ids(perf, data))


def fold_perf_data(
    perf: str,
    data: Path,
    pids: tuple[int, ...] = (),
    comms: tuple[str, ...] = (),
    per_thread: bool = False,
    names: dict[int, str] | None = None,
    symfs: Path | None = None,
    timed: bool = False,
    kallsyms: Path | None = None,
    callers: Path | None = None,
) -> tuple[FoldResult, list[str]]:
    """The folded stacks of a perf.data; unnamed code keeps its address for the analysis to group.

    pmuprof-perfdata reads the file itself (the same output as perf script piped into the folder,
    2-3x faster than perf script alone); where it declines (DWARF or LBR call graphs, compressed or
    pipe-mode files, --symfs, kernel modules without kcore, ...) or is not built, perf script does it.
    Returns (result, argv used). Process filtering is left to the folder (perf's --comms would
    drop renamed threads). ``timed`` (the file has sample times): the result's sample table gets seconds.
    User frames of binaries with DWARF expand into their inline chains (the native reader's --inline)
    unless ``PMUPROF_NO_INLINE=1`` is set (benchmarks/RESULTS.md measures what the expansion costs).
    ``kallsyms``: the recording boot's kernel symbols (a run directory's copy), for both readers.
    ``callers``: a run directory's recovered-callers.tsv (model/callers.py); only the native reader splices
    them in (perf script has no such option: a report read through it shows the walk as recorded).
    """
    native = perfdata_path() if symfs is None else None
    fallback = ""
    if native is not None:
        inline = inline_wanted()
        try:
            got = fold_perf_data_native(
                data,
                pids,
                comms,
                per_thread,
                names,
                raw_unknown=True,
                binary=native,
                timed=timed,
                inline=inline,
                kallsyms=kallsyms,
                callers=callers,
            )
            return got.result, perfdata_argv(
                native,
                data,
                Path("meta.json"),
                pids,
                comms,
                per_thread,
                names,
                True,
                timed=timed,
                inline=inline,
                kallsyms=kallsyms,
                callers=callers,
            )
        except PerfdataFallback as declined:
            fallback = declined.reason
    why = repair.impossible_header(data)  # checked here too: with --symfs or no native reader, perf script
    if why:  # is the only reader, and it loops on such a header
        raise repair.corrupt_header(data, why)
    argv = perfcmd.script_argv(perf, data, pids, symfs=symfs, timed=timed, kallsyms=kallsyms)
    result = fold_perf_script_process(
        argv, pids=pids, comms=comms, per_thread=per_thread, names=names, raw_unknown=True
    )
    if fallback:  # what perf script's text does not say: each process's executable (two servers of one name)
        note = f"{DECLINED} ({fallback[:200]}); no inline frames, "
        result = replace(result, notes=(*result.notes, note + "and no process's own executable is known"))
    return result, argv


def _first(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "no message")[:300]

"""Export a Profile for other tools: folded (flamegraph.pl, Pyroscope), pprof, speedscope."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, Mapping

from .. import outfile
from ..errors import UsageError
from ..model.folded import write_folded
from ..model.profile import Profile
from .facts import event_names
from .pprof import pprof_bytes
from .speedscope import speedscope_json

FORMATS = ("folded", "pprof", "speedscope")
_HEADER_KEYS = ("pmuprof_version", "started", "duration_s", "mode")


def export_headers(profile: Profile) -> dict[str, Any]:
    """The folded header lines (context for whoever reads the file later), in a fixed order."""
    run = profile.run
    headers: dict[str, Any] = {k: getattr(run, k) for k in _HEADER_KEYS if getattr(run, k) not in (None, "")}
    requested, recorded = event_names(profile)
    if requested:
        headers["event_requested"] = requested
    if recorded:
        headers["event_recorded"] = recorded
    for key in ("frequency", "call_graph"):
        if getattr(run.record, key) not in (None, ""):
            headers[key] = getattr(run.record, key)
    headers["unit"] = profile.unit
    headers["samples"] = profile.total
    if profile.source:
        headers["source"] = profile.source
    return headers


def export_bytes(profile: Profile, fmt: str, headers: bool = False, biases: Mapping[str, int] | None = None,
                 per_thread: bool = False) -> bytes:
    """The exported file's bytes; the same profile gives the same bytes in every format.

    Folded output is stack lines only, what every folded consumer parses (difffolded.pl and
    inferno-diff-folded warn on, and miscount, any other line); ``headers=True`` puts the
    ``# key: value`` context lines first, for a file that goes back into pmuprof. ``biases`` (binary path → load bias) give pprof
    the addresses unnamed functions ran at; ``per_thread``: the stacks carry a thread frame
    under each process root, and speedscope gets one profile per thread.
    """
    if fmt == "folded":
        out = io.StringIO()
        write_folded(out, profile.stacks, export_headers(profile) if headers else None)
        return out.getvalue().encode("utf-8", "backslashreplace")
    if fmt == "pprof":
        return pprof_bytes(profile, export_headers(profile), biases)
    if fmt == "speedscope":
        return speedscope_json(profile, per_thread=per_thread).encode("utf-8", "backslashreplace")
    raise UsageError(f"unknown export format {fmt!r}", f"use one of: {', '.join(FORMATS)}")


def export_profile(profile: Profile, fmt: str, path: Path, headers: bool = False,
                   biases: Mapping[str, int] | None = None, per_thread: bool = False) -> Path:
    """Write the profile to ``path`` in ``fmt`` through outfile (a partial file never has the final name;
    a device or FIFO is written in place; a symlink is refused)."""
    return outfile.write_bytes(Path(path), export_bytes(profile, fmt, headers, biases, per_thread))

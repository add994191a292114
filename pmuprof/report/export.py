"""Export a Profile for other tools: folded (flamegraph.pl, Pyroscope), pprof, speedscope."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from collections.abc import Callable, Mapping

from .. import outfile
from ..errors import UsageError
from ..model.folded import write_folded
from ..model.profile import Profile
from .facts import event_names
from .pprof import pprof_bytes
from .speedscope import speedscope_json

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


@dataclass(frozen=True)
class Ask:
    """What the command line asked of an export beyond its format."""

    headers: bool = False  # folded: the '# key: value' context lines first
    biases: Mapping[str, int] | None = None  # binary path -> load bias: the addresses unnamed functions ran at
    per_thread: bool = False  # the stacks carry a thread frame under each process root


@dataclass(frozen=True)
class Format:
    """One export format: its words in --format's help, its writer, and what the command gathers for it."""

    about: str
    write: Callable[[Profile, Ask], bytes]
    biases: bool = False  # the command reads the targets' load biases for it
    threads: bool = False  # per thread by default when the input has thread ids


def _folded(profile: Profile, ask: Ask) -> bytes:
    out = io.StringIO()
    write_folded(out, profile.stacks, export_headers(profile) if ask.headers else None)
    return out.getvalue().encode("utf-8", "backslashreplace")


FORMATS: dict[str, Format] = {  # the export command's --format choices, in this order
    "folded": Format("FlameGraph stack lines", _folded),
    "pprof": Format("gzipped profile.proto", lambda p, ask: pprof_bytes(p, export_headers(p), ask.biases), biases=True),
    "speedscope": Format(
        "its JSON",
        lambda p, ask: speedscope_json(p, per_thread=ask.per_thread).encode("utf-8", "backslashreplace"),
        threads=True,
    ),
}


def export_bytes(
    profile: Profile, fmt: str, headers: bool = False, biases: Mapping[str, int] | None = None, per_thread: bool = False
) -> bytes:
    """The exported file's bytes; the same profile gives the same bytes in every format.

    Folded output is stack lines only, what every folded consumer parses (difffolded.pl and
    inferno-diff-folded warn on, and miscount, any other line); ``headers=True`` puts the
    ``# key: value`` context lines first, for a file that goes back into pmuprof. ``biases`` (binary path → load bias) give pprof
    the addresses unnamed functions ran at; ``per_thread``: the stacks carry a thread frame
    under each process root, and speedscope gets one profile per thread.
    """
    found = FORMATS.get(fmt)
    if found is None:
        raise UsageError(f"unknown export format {fmt!r}", f"use one of: {', '.join(FORMATS)}")
    return found.write(profile, Ask(headers, biases, per_thread))


def export_profile(
    profile: Profile,
    fmt: str,
    path: Path,
    headers: bool = False,
    biases: Mapping[str, int] | None = None,
    per_thread: bool = False,
) -> Path:
    """Write the profile to ``path`` in ``fmt`` through outfile (a partial file never has the final name;
    a device or FIFO is written in place; a symlink is refused)."""
    return outfile.write_bytes(Path(path), export_bytes(profile, fmt, headers, biases, per_thread))

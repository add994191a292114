"""Report pipeline: input → Profile → findings → writers (pure after loading the input)."""

from __future__ import annotations

from pathlib import Path

from .errors import InputError
from .analysis.load import load_input
from .model import rundir
from .model.profile import Profile


def findings_for(profile: Profile) -> list:
    from .findings import engine
    return engine.evaluate(profile)


def extras_for(profile: Profile) -> dict:
    """Optional run-directory data for the report (skid-corrected hot spots)."""
    src = Path(profile.source)
    base = src if src.is_dir() else src.parent
    skid = rundir.read_json(base / rundir.SKID, None) if profile.run.get("targets") else None
    return {"instruction_hotspots": skid} if skid else {}


def report_profile(profile: Profile, out_dir: Path) -> dict:
    from .report import write_outputs
    findings = findings_for(profile)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = write_outputs(profile, findings, out_dir, extras_for(profile))
    return {"paths": paths, "findings": findings, "profile": profile}


def report_input(input_path: Path, out_dir: Path, pids: tuple[int, ...] = (), comms: tuple[str, ...] = (),
                 allow_empty: bool = False) -> dict:
    """Write report.html, findings.json and report.md for any supported input.

    ``allow_empty``: a capture of an idle server still gets a report (its warning says why it is empty).
    """
    profile = load_input(Path(input_path), pids, comms)
    if not profile.total and not allow_empty:
        raise InputError(f"{input_path}: the profile is empty", "record while the server is busy")
    return report_profile(profile, Path(out_dir))


def findings_json_text(input_path: Path, pids: tuple[int, ...] = (), comms: tuple[str, ...] = ()) -> str:
    from .report import findings_json
    profile = load_input(Path(input_path), pids, comms)
    return findings_json(profile, findings_for(profile))

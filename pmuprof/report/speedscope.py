"""Write a Profile in speedscope's file format: one sampled profile per process, frames shared."""

from __future__ import annotations

import json
from typing import Any

from .. import __version__
from ..model.profile import Profile

SCHEMA = "https://www.speedscope.app/file-format-schema.json"


def speedscope_document(profile: Profile, name: str = "") -> dict[str, Any]:
    """The speedscope JSON: the process root becomes the profile, the rest its stacks (root first)."""
    frames: list[dict[str, str]] = []
    index: dict[str, int] = {}
    by_process: dict[str, tuple[list[list[int]], list[int]]] = {}
    for stack, count in sorted(profile.stacks.items()):
        if not stack or count <= 0:
            continue
        ids = []
        for frame in stack[1:] or stack[:1]:
            if frame not in index:
                index[frame] = len(frames)
                frames.append({"name": frame})
            ids.append(index[frame])
        samples, weights = by_process.setdefault(stack[0], ([], []))
        samples.append(ids)
        weights.append(count)
    profiles = []
    for proc in profile.processes():
        samples, weights = by_process.get(proc, ([], []))
        profiles.append({
            "type": "sampled", "name": proc, "unit": "none",
            "startValue": 0, "endValue": sum(weights), "samples": samples, "weights": weights,
        })
    return {
        "$schema": SCHEMA,
        "name": name or profile.source or "pmuprof profile",
        "exporter": f"pmuprof {__version__}",
        "activeProfileIndex": 0,
        "shared": {"frames": frames},
        "profiles": profiles,
    }


def speedscope_json(profile: Profile, name: str = "") -> str:
    return json.dumps(speedscope_document(profile, name), sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n"

"""Write a Profile in speedscope's file format: one sampled profile per process (or thread), frames shared."""

from __future__ import annotations

import json
from typing import Any

from .. import __version__
from ..model.profile import Profile

SCHEMA = "https://www.speedscope.app/file-format-schema.json"


def _period_ns(profile: Profile) -> int:
    """Nanoseconds of CPU one sample stands for (1e9/F), 0 when the frequency is unknown."""
    frequency = profile.run.record.frequency
    return int(round(1e9 / frequency)) if isinstance(frequency, (int, float)) and frequency > 0 else 0


def speedscope_document(profile: Profile, name: str = "", per_thread: bool = False) -> dict[str, Any]:
    """The speedscope JSON. The process root (and with ``per_thread`` the thread frame under it, as
    folded with per-thread roots) becomes the profile; the rest are its stacks, root first. Weights
    are CPU nanoseconds (samples x 1e9/F) when the sampling frequency is known, else sample counts."""
    period = _period_ns(profile)
    frames: list[dict[str, str]] = []
    index: dict[str, int] = {}
    by_profile: dict[str, tuple[list[list[int]], list[int]]] = {}
    order: dict[str, int] = {}
    head = 2 if per_thread else 1
    for stack, count in sorted(profile.stacks.items()):
        if not stack or count <= 0:
            continue
        ids = []
        for frame in stack[head:] or stack[-1:]:
            if frame not in index:
                index[frame] = len(frames)
                frames.append({"name": frame})
            ids.append(index[frame])
        key = " ".join(stack[:head])
        samples, weights = by_profile.setdefault(key, ([], []))
        samples.append(ids)
        weights.append(count * period if period else count)
        order[key] = order.get(key, 0) - count
    rank = {proc: i for i, proc in enumerate(profile.processes())}
    keys = sorted(by_profile, key=lambda k: (rank.get(k.split(" ")[0], len(rank)), order[k], k))
    profiles = [
        {
            "type": "sampled",
            "name": key,
            "unit": "nanoseconds" if period else "none",
            "startValue": 0,
            "endValue": sum(by_profile[key][1]),
            "samples": by_profile[key][0],
            "weights": by_profile[key][1],
        }
        for key in keys
    ]
    return {
        "$schema": SCHEMA,
        "name": name or profile.source or "pmuprof profile",
        "exporter": f"pmuprof {__version__}",
        "activeProfileIndex": 0,
        "shared": {"frames": frames},
        "profiles": profiles,
    }


def speedscope_json(profile: Profile, name: str = "", per_thread: bool = False) -> str:
    return (
        json.dumps(
            speedscope_document(profile, name, per_thread), sort_keys=True, ensure_ascii=False, separators=(",", ":")
        )
        + "\n"
    )

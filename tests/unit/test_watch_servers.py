"""watch with several servers: each counts its own polls in a row; the first whose trigger holds is captured
first, with the others; the cooldown and --max-captures hold for all (fake pollers, no server, no perf)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from pmuprof.workflows import watch as w
from pmuprof.workflows.triggers import DiskFloor, Poll, WatchPlan, parse_condition

A, B = 111, 222


class FakePoller:
    """Threads_running from a per-pid script, one value per poll."""

    values = {A: [9, 1, 9, 1, 9, 1, 9], B: [1, 9, 9, 9, 9, 9, 9]}

    def __init__(self, pid: int, plan: WatchPlan, mysql_options: object) -> None:
        self.pid, self.plan, self.n, self.closed = pid, plan, 0, False

    def poll(self) -> Poll:
        value = self.values[self.pid][self.n]
        self.n += 1
        return Poll(time.time(), status={"Threads_running": float(value)})

    def close(self) -> None:
        self.closed = True


def test_the_first_server_to_hold_its_own_count_is_captured_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A holds on every other poll, B from its second on: counted apart, B fires at its third poll (a count
    over both servers would have fired at the second: A's 9 then B's 9)."""
    captured: list[tuple[int, int, int]] = []
    pollers: list[FakePoller] = []

    def poller(pid, plan, opts):
        pollers.append(FakePoller(pid, plan, opts))
        return pollers[-1]

    def capture(opts, fire, chosen, log, before=()):
        captured.append((chosen.pid, chosen.n, fire.hits))
        return tmp_path / f"run{len(captured)}", ""

    monkeypatch.setattr(w, "Poller", poller)
    monkeypatch.setattr(w, "capture_once", capture)
    plan = WatchPlan((parse_condition("Threads_running>5"),), cycles=2, cooldown_s=0.0, max_captures=1)
    opts = w.WatchOptions(pids=(A, B), plan=plan, base_dir=tmp_path / "w", interval_s=0.0, disk_floor=DiskFloor())
    lines: list[str] = []
    runs = w.watch(opts, lines.append, sleep=lambda s: None)
    assert captured == [(B, 3, 2)] and runs == [tmp_path / "run1"]
    assert [p.n for p in pollers] == [3, 3] and all(p.closed for p in pollers)  # polled together, closed
    assert lines[0].startswith(f"watching pid {A}, {B} every 0 s") and "the first to hold captures them all" in lines[0]


def test_a_capture_targets_the_firing_server_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """capture_once records the firing server first (its server facts), then the others, and names it."""
    asked = {}

    def record(ropts, progress, log, extra=()):
        asked["pids"] = ropts.pids
        raise w.PmuprofError("stop here")

    monkeypatch.setattr(w, "record", record)
    plan = WatchPlan((parse_condition("Threads_running>5"),), cycles=1)
    opts = w.WatchOptions(pids=(A, B, 333), plan=plan, base_dir=tmp_path)
    poll = Poll(time.time(), status={"Threads_running": 9.0})
    fire = w.Fire(plan.conditions[0], 1, (poll,), 1)
    lines: list[str] = []
    with pytest.raises(w.PmuprofError):
        w.capture_once(opts, fire, FakePoller(B, plan, None), lines.append)
    assert asked["pids"] == (B, A, 333) and f"held for 1 polls on pid {B}" in lines[0]

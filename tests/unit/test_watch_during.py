"""watch's polls during a capture are a per-second source: each trigger condition's value is a series on
the capture's clock (drawn under the strip), and the polls themselves still go to run.json and watch-polls.tsv."""

from __future__ import annotations

from pmuprof.workflows.triggers import Poll, WatchPlan, parse_condition
from pmuprof.workflows.watch import DuringCapture


class _Poller:
    def __init__(self, plan: WatchPlan) -> None:
        self.plan, self.n = plan, 0

    def poll(self) -> Poll:
        self.n += 1
        return Poll(1000.0 + self.n, {"Threads_running": 10.0 * self.n}, {"statistics": self.n}, cpu=50.0)


def test_each_condition_is_a_series_and_every_poll_is_kept():
    conditions = ("Threads_running>50", "state:statistics>=3", "cpu>80", "Threads_running<2")
    plan = WatchPlan(tuple(parse_condition(c) for c in conditions))
    clock = iter([10.2, 10.3, 11.5, 11.6, 12.5, 12.6])  # three polls, each in its own second
    during = DuringCapture(_Poller(plan), 1.0, clock=lambda: next(clock))
    for _ in range(3):
        during._poll()
    shown = {s.name: s for s in during.series()}
    assert list(shown) == ["watch.Threads_running", "watch.state:statistics", "watch.cpu"]  # one per subject
    assert shown["watch.Threads_running"].first == 10 and shown["watch.Threads_running"].values == (10.0, 20.0, 30.0)
    assert shown["watch.state:statistics"].values == (1.0, 2.0, 3.0) and shown["watch.cpu"].unit == "%"
    assert all(s.show and s.source == "watch" for s in shown.values())
    assert [p.t for p in during.polls_seen] == [1001.0, 1002.0, 1003.0]  # epoch times, for run.json's polls_during

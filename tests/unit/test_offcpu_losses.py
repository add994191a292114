"""What the off-CPU tracer lost becomes a capture warning when it changes what the report says."""

from __future__ import annotations

from pmuprof.capture.offcpu.tracer import _loss_warnings
from pmuprof.model.offcpu import OffCpu


def _missed(out_missed: int, in_missed: int, switches: int = 100_000) -> tuple[str, ...]:
    o = OffCpu(
        requested=True, recorded=True, switches=switches, lost={"out_missed": out_missed, "in_missed": in_missed}
    )
    return tuple(w for w in _loss_warnings(o) if "not seen by the tracer" in w)


def test_switches_the_tracer_missed_are_said_over_one_percent():
    """Missed switch-outs and block ends (another tracer beside it) leave waits out: the off-CPU times are
    lower bounds, said once over 1 % of the switches, quiet under it."""
    (line,) = _missed(600, 500)
    assert "1100 of 100000 context switches" in line and "lower bounds" in line
    assert _missed(600, 399) == ()
    assert _missed(0, 0, switches=0) == ()

"""Sampling noise: intervals for a change in a share (two binomials) or in a rate (two Poisson counts), at 95 %.

A profile's samples are treated as independent draws: a function's self (or inclusive) count is
binomial in the side's sample total, so the difference of two shares gets Newcombe's hybrid score
interval (Wilson intervals of each side combined; Newcombe 1998, method 10), which stays sensible
for small and zero counts where the plain Wald interval does not. A count in a fixed time is
Poisson; the difference of two rates gets the normal approximation with each count's variance.
Both measure sampling noise only: runs also differ by load, and bursts make samples correlated,
so an interval that excludes zero says "not sampling noise", not "caused by the change".
"""

from __future__ import annotations

import math

CONFIDENCE = 0.95
Z = 1.959963984540054  # two-sided 95 % normal quantile


def wilson(count: float, total: float, z: float = Z) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion count/total."""
    if total <= 0:
        return 0.0, 1.0
    p = count / total
    denom = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denom
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def share_change(before: float, n_before: float, after: float, n_after: float, z: float = Z) -> tuple[float, float]:
    """Interval of (after/n_after − before/n_before): Newcombe's hybrid score interval."""
    p1, p2 = before / n_before, after / n_after
    l1, u1 = wilson(before, n_before, z)
    l2, u2 = wilson(after, n_after, z)
    d = p2 - p1
    low = d - math.sqrt((p2 - l2) ** 2 + (u1 - p1) ** 2)
    high = d + math.sqrt((u2 - p2) ** 2 + (p1 - l1) ** 2)
    return low, high


def outside(interval: tuple[float, float]) -> bool:
    """Whether a change interval excludes zero: the change is larger than the sampling noise."""
    return interval[0] > 0 or interval[1] < 0


def rate_noise(count_a: float, unit_a: float, count_b: float, unit_b: float, z: float = Z) -> float:
    """Half-width of the interval of (count_b·unit_b − count_a·unit_a) for two Poisson counts.

    ``unit`` is what one sample stands for (e.g. the share of the sampled CPUs' time). A zero
    count is given the variance of one sample, so that nothing seen is not taken as exactly zero.
    """
    return z * math.sqrt(max(count_a, 1.0) * unit_a**2 + max(count_b, 1.0) * unit_b**2)


def smallest_change(share: float, n_before: float, n_after: float, z: float = Z) -> float:
    """The change in points a function at ``share`` on both sides must exceed to be outside the noise."""
    return z * math.sqrt(share * (1 - share) * (1 / n_before + 1 / n_after))

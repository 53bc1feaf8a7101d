"""Statistics of timing samples: the median, its distribution-free confidence interval, ratios of medians.

Timing samples are skewed (a floor plus occasional stalls: clocks, other tenants, interrupts), so the
median, not the mean, is reported, with a confidence interval from order statistics that assumes no
distribution: the ranks n/2 -+ z*sqrt(n)/2 (the normal approximation of the binomial that counts samples
below the median; e.g. Conover, "Practical Nonparametric Statistics", 3rd ed., sec. 3.2).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

Z95 = 1.959964  # two-sided 95% normal quantile
MIN_SAMPLES_FOR_CI = 6  # below this the order-statistic interval is the whole sample range


@dataclass(frozen=True)
class Summary:
    """Median of samples with a 95% confidence interval [lo, hi]; same unit as the samples."""

    median: float
    lo: float
    hi: float
    n: int

    @property
    def rel_half_width(self) -> float:
        """Half the CI width relative to the median (0.01 = +-1%); inf when undefined."""
        if self.n < MIN_SAMPLES_FOR_CI or self.median <= 0:
            return math.inf
        return (self.hi - self.lo) / 2 / self.median


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        raise ValueError("median of no samples")
    mid = n // 2
    return ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def summarize(samples: Sequence[float], z: float = Z95) -> Summary:
    """Median and its order-statistic confidence interval (95% by default)."""
    ordered = sorted(samples)
    n = len(ordered)
    if n == 0:
        raise ValueError("no samples to summarize")
    half = z * math.sqrt(n) / 2
    lo_rank = max(1, math.floor(n / 2 - half))  # 1-based ranks of the interval's ends
    hi_rank = min(n, math.ceil(n / 2 + 1 + half))
    return Summary(median=median(ordered), lo=ordered[lo_rank - 1], hi=ordered[hi_rank - 1], n=n)


def converged(samples: Sequence[float], target_rel_half_width: float, min_samples: int) -> bool:
    """The stop rule: enough samples, and the median is known to within +-target (relative)."""
    if len(samples) < max(min_samples, MIN_SAMPLES_FOR_CI):
        return False
    return summarize(samples).rel_half_width <= target_rel_half_width


@dataclass(frozen=True)
class Ratio:
    """A ratio of two medians (e.g. speedup = reference / candidate) with a conservative 95% interval:
    each end combines the two medians' interval ends that push the ratio furthest that way."""

    value: float
    lo: float
    hi: float


def ratio(numerator: Summary, denominator: Summary) -> Ratio:
    if denominator.median <= 0 or denominator.lo <= 0:
        raise ValueError("ratio with a non-positive denominator")
    return Ratio(value=numerator.median / denominator.median, lo=numerator.lo / denominator.hi,
                 hi=numerator.hi / denominator.lo)


def geometric_mean(values: Sequence[float]) -> float:
    if not values or any(v <= 0 for v in values):
        raise ValueError("geometric mean needs positive values")
    return math.exp(sum(math.log(v) for v in values) / len(values))


def geometric_mean_ratio(ratios: Sequence[Ratio]) -> Ratio:
    """Geometric mean of several ratios; its interval is the geometric mean of their ends (conservative:
    it assumes every shape errs the same way at once)."""
    return Ratio(value=geometric_mean([r.value for r in ratios]), lo=geometric_mean([r.lo for r in ratios]),
                 hi=geometric_mean([r.hi for r in ratios]))

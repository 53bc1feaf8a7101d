"""Is a candidate faster than the incumbent? Decided on paired, interleaved timings, never on what an agent
says (docs/orchestrator.md, "Deciding a gain").

``profile(candidate, baseline=incumbent)`` times the two in one session, alternating calls on fresh
inputs, and keeps every sample (``Timing.samples_ms``). Call i of each forms a pair; with
d_i = ln t_incumbent,i - ln t_candidate,i, the speedup is r = exp(mean d) and its 95% CI comes from
Student's t on the d_i: pairing cancels the drift both share (clocks, temperature, other tenants).
Several shapes combine as the geometric mean of their speedups, the CI from the sum of their variances.

A candidate is better when the CI's lower end exceeds 1 + delta, delta = max(1%, twice the spread of an
A/A run: the incumbent timed against itself, whose true speedup is 1). A winner is then confirmed in a
fresh process on new inputs before it is promoted (the winner's curse is real at 1% effects).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from kernel_mcp.stats import Ratio

MIN_DELTA = 0.01
MIN_PAIRS = 3

# two-sided 95% Student t quantiles by degrees of freedom (1..30); beyond 30 the normal 1.96 is within 2%
_T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
        2.045, 2.042]


def t95(degrees: int) -> float:
    return _T95[degrees - 1] if degrees <= len(_T95) else 1.960


def _log_pairs(incumbent_ms: Sequence[float], candidate_ms: Sequence[float]) -> list[float]:
    pairs = [(a, b) for a, b in zip(incumbent_ms, candidate_ms) if a > 0 and b > 0]
    if len(pairs) < MIN_PAIRS:
        raise ValueError(f"{len(pairs)} paired samples: at least {MIN_PAIRS} are needed for an interval")
    return [math.log(a) - math.log(b) for a, b in pairs]


def _mean_and_variance_of_mean(d: list[float]) -> tuple[float, float]:
    n = len(d)
    mean = sum(d) / n
    variance = sum((x - mean) ** 2 for x in d) / (n - 1)
    return mean, variance / n


def paired_speedup(incumbent_ms: Sequence[float], candidate_ms: Sequence[float]) -> Ratio:
    """Speedup of the candidate over the incumbent from samples taken alternately (pair i: call i of each)."""
    d = _log_pairs(incumbent_ms, candidate_ms)
    mean, var = _mean_and_variance_of_mean(d)
    half = t95(len(d) - 1) * math.sqrt(var)
    return Ratio(value=math.exp(mean), lo=math.exp(mean - half), hi=math.exp(mean + half))


def combined_speedup(shapes: Sequence[tuple[Sequence[float], Sequence[float]]]) -> Ratio:
    """Geometric mean over shapes of the paired speedups, each shape (incumbent, candidate) samples; the
    CI from the shapes' variances summed (their timings are independent)."""
    logs = [_log_pairs(a, b) for a, b in shapes]
    parts = [_mean_and_variance_of_mean(d) + (len(d),) for d in logs]
    if not parts:
        raise ValueError("no shapes to combine")
    k = len(parts)
    mean = sum(m for m, _, _ in parts) / k
    var = sum(v for _, v, _ in parts) / k ** 2
    degrees = max(1, min(n for _, _, n in parts) - 1)  # conservative: the smallest shape's
    half = t95(degrees) * math.sqrt(var)
    return Ratio(value=math.exp(mean), lo=math.exp(mean - half), hi=math.exp(mean + half))


def delta_from_aa(aa: Ratio) -> float:
    """The significance margin from an A/A run (the incumbent against itself): twice how far its interval
    strays from 1, at least MIN_DELTA."""
    spread = max(abs(math.log(aa.lo)), abs(math.log(aa.hi)))
    return max(MIN_DELTA, 2 * (math.exp(spread) - 1))


def significant(speedup: Ratio, delta: float = MIN_DELTA) -> bool:
    return speedup.lo > 1 + delta

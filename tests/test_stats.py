"""Statistics of timing samples: the median CI, the stop rule, ratios and geometric means."""
import math
import random

import pytest

from kernel_mcp import stats


def test_median_odd_even_and_empty():
    assert stats.median([3, 1, 2]) == 2
    assert stats.median([4, 1, 3, 2]) == 2.5
    with pytest.raises(ValueError):
        stats.median([])


def test_ci_brackets_the_median_and_shrinks_with_more_samples():
    rng = random.Random(1)
    small = [10 + rng.gauss(0, 0.5) for _ in range(20)]
    large = [10 + rng.gauss(0, 0.5) for _ in range(2000)]
    s, l = stats.summarize(small), stats.summarize(large)
    assert s.lo <= s.median <= s.hi and l.lo <= l.median <= l.hi
    assert l.rel_half_width < s.rel_half_width / 5


def test_ci_coverage_is_about_95_percent():
    """The order-statistic interval must cover the true median of a skewed distribution ~95% of the time."""
    rng = random.Random(7)
    true_median = math.log(2)  # exponential(1)
    hits = 0
    for _ in range(400):
        s = stats.summarize([rng.expovariate(1) for _ in range(60)])
        hits += s.lo <= true_median <= s.hi
    assert 0.92 <= hits / 400 <= 0.995


def test_too_few_samples_have_no_interval():
    s = stats.summarize([1.0, 1.0, 1.0])
    assert s.rel_half_width == math.inf
    assert not stats.converged([1.0] * 5, 0.01, min_samples=2)


def test_stop_rule():
    assert stats.converged([100.0] * 10, 0.01, min_samples=10)
    assert not stats.converged([100.0] * 9, 0.01, min_samples=10)
    noisy = [100.0 + (i % 2) * 30 for i in range(10)]
    assert not stats.converged(noisy, 0.01, min_samples=10)
    assert stats.converged(noisy, 0.5, min_samples=10)


def test_ratio_interval_is_conservative():
    ref, cand = stats.Summary(10, 9, 11, 30), stats.Summary(5, 4, 6, 30)
    r = stats.ratio(ref, cand)
    assert r.value == 2 and r.lo == pytest.approx(9 / 6) and r.hi == pytest.approx(11 / 4)
    with pytest.raises(ValueError):
        stats.ratio(ref, stats.Summary(0, 0, 0, 10))


def test_geometric_mean():
    assert stats.geometric_mean([2, 8]) == pytest.approx(4)
    g = stats.geometric_mean_ratio([stats.Ratio(2, 1, 4), stats.Ratio(8, 4, 16)])
    assert (g.value, g.lo, g.hi) == pytest.approx((4, 2, 8))
    with pytest.raises(ValueError):
        stats.geometric_mean([1, 0])

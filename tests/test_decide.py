"""Paired speedups and the significance rule (kernel_mcp/agent/decide.py) on simulated interleaved timings
with shared drift and noise: the interval covers the truth, an A/A run never counts as a gain, a real 3%
gain is seen, and pairing sees through drift that unpaired medians cannot."""
import math
import random

import pytest

from kernel_mcp import stats
from kernel_mcp.agent.decide import combined_speedup, delta_from_aa, paired_speedup, significant


def _interleaved(rng, n, speedup, noise=0.03, drift=0.0):
    """(incumbent, candidate) times of n alternating calls: a shared slow drift (clocks warming), each
    call with its own log-normal noise."""
    inc, cand = [], []
    for i in range(n):
        level = 1.0 + drift * math.sin(i / 3)
        inc.append(level * math.exp(rng.gauss(0, noise)))
        cand.append(level / speedup * math.exp(rng.gauss(0, noise)))
    return inc, cand


def test_the_interval_covers_the_true_speedup():
    rng = random.Random(7)
    covered = sum(r.lo <= 1.05 <= r.hi for r in (paired_speedup(*_interleaved(rng, 25, 1.05)) for _ in range(400)))
    assert covered >= 0.92 * 400, covered  # nominal 95%


def test_an_a_a_run_never_counts_as_a_gain_and_a_real_3_percent_does():
    rng = random.Random(11)
    false = sum(significant(paired_speedup(*_interleaved(rng, 25, 1.0, drift=0.2))) for _ in range(300))
    assert false <= 3, false
    seen = sum(significant(paired_speedup(*_interleaved(rng, 25, 1.03, noise=0.02, drift=0.2))) for _ in range(100))
    assert seen >= 80, seen


def test_pairing_sees_through_drift_that_unpaired_medians_do_not():
    rng = random.Random(3)
    inc, cand = _interleaved(rng, 30, 1.04, noise=0.01, drift=0.3)
    paired = paired_speedup(inc, cand)
    unpaired = stats.ratio(stats.summarize(inc), stats.summarize(cand))
    assert significant(paired) and not significant(unpaired)
    assert paired.hi - paired.lo < 0.2 * (unpaired.hi - unpaired.lo)


def test_shapes_combine_as_a_geometric_mean():
    rng = random.Random(5)
    combined = combined_speedup([_interleaved(rng, 20, 1.2, noise=0.005), _interleaved(rng, 20, 1.0 / 1.2, noise=0.005)])
    assert combined.value == pytest.approx(1.0, abs=0.01) and combined.lo < 1 < combined.hi


def test_delta_from_an_a_a_run_and_too_few_pairs():
    assert delta_from_aa(stats.Ratio(1.0, 0.999, 1.001)) == 0.01  # a quiet machine: the 1% floor
    assert delta_from_aa(stats.Ratio(1.01, 0.98, 1.04)) == pytest.approx(2 * 0.04)  # the far end: 1.04
    with pytest.raises(ValueError, match="at least 3"):
        paired_speedup([1.0, 1.0], [1.0, 1.0])

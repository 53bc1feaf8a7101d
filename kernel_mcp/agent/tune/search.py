"""Searching a kernel's configurations without a model: successive halving over a sample of the space, then
coordinate descent from its winner, moving only on a statistically significant gain.

Both are pure over a measurement the caller provides, so the same search runs against the real profile
tool (``compare``: the two configurations timed interleaved in one session on fresh inputs) and against
a synthetic landscape in the tests:

* ``compare(a, b)`` -> the speedup of ``b`` over ``a`` as ``stats.Ratio`` (value and 95% CI), or None when
  ``b`` failed (compile error, wrong output, resources): a failed configuration is never chosen;
* ``measure(configs, budget)`` -> median time per configuration (None: failed), ``budget`` a relative
  effort the caller maps to samples or seconds;
* with several devices (``width`` > 1), ``compare_many(a, bs)`` -> ``compare(a, b)`` for each of ``bs``, run
  at once: descent then compares a point's neighbours side by side and steps to the best significant
  gain (more comparisons than the one-at-a-time walk, in fewer waits), and halving starts from at least
  four configurations per device, so its first rounds keep every device busy.

A move needs the CI's lower end above 1 + delta, delta = max(1%, twice an A/A run's spread) as the
orchestrator measures it: on a flat landscape the search stays where it started (tests hold it to that
over many seeds), unlike torch Inductor's coordinate descent, which moves on any 0.1% gain.
"""
from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from kernel_mcp.agent.tune.params import Config, Param, space_size
from kernel_mcp.stats import Ratio

Compare = Callable[[Config, Config], Ratio | None]
CompareMany = Callable[[Config, list[Config]], list[Ratio | None]]
Measure = Callable[[list[Config], float], list[float | None]]
DELTA = 0.01


@dataclass
class Trace:
    """What the search did: the winner, each comparison made, and how many."""

    best: Config
    steps: list[tuple[Config, Config, Ratio | None, bool]] = field(default_factory=list)  # (from, to, ratio, moved)
    measured: int = 0  # configurations timed in halving rounds

    @property
    def comparisons(self) -> int:
        return len(self.steps)


def _key(config: Config) -> tuple:
    return tuple(sorted(config.items()))


def neighbours(params: list[Param], config: Config, name: str) -> list[Config]:
    """The configurations one step up and one step down ``name``'s values from ``config``."""
    param = next(p for p in params if p.name == name)
    index = param.values.index(config[name])
    return [{**config, name: param.values[i]} for i in (index + 1, index - 1) if 0 <= i < len(param.values)]


def coordinate_descent(params: list[Param], start: Config, compare: Compare, delta: float = DELTA,
                       feasible: Callable[[Config], bool] = lambda _: True, max_rounds: int = 6,
                       trace: Trace | None = None) -> Trace:
    """From ``start``, for each parameter in turn: try a step up and a step down, keep walking the way
    that gains significantly; rounds until a whole round moves nothing (or ``max_rounds``)."""
    trace = trace or Trace(best=dict(start))
    trace.best = dict(start)
    tried = {_key(start)}
    for _ in range(max_rounds):
        moved_this_round = False
        for param in params:
            if len(param.values) < 2:
                continue
            for step in neighbours(params, trace.best, param.name):
                walked = _walk(params, param.name, trace, step, compare, delta, feasible, tried)
                if walked:
                    moved_this_round = True
                    break  # that direction gained: the other one from the new point would go back
        if not moved_this_round:
            break
    return trace


def _walk(params: list[Param], name: str, trace: Trace, step: Config, compare: Compare, delta: float,
          feasible: Callable[[Config], bool], tried: set) -> bool:
    """Move to ``step`` and on in the same direction while each move gains significantly."""
    moved = False
    direction = 1 if step[name] > trace.best[name] else -1
    while step is not None and _key(step) not in tried and feasible(step):
        tried.add(_key(step))
        ratio = compare(trace.best, step)
        gained = ratio is not None and ratio.lo > 1 + delta
        trace.steps.append((dict(trace.best), dict(step), ratio, gained))
        if not gained:
            break
        trace.best, moved = step, True
        ahead = [n for n in neighbours(params, step, name) if (n[name] - step[name]) * direction > 0]
        step = ahead[0] if ahead else None
    return moved


def wide_descent(params: list[Param], start: Config, compare_many: CompareMany, width: int, delta: float = DELTA,
                 feasible: Callable[[Config], bool] = lambda _: True, max_moves: int | None = None,
                 trace: Trace | None = None) -> Trace:
    """Coordinate descent for ``width`` devices: every untried neighbour of the current point (each
    parameter a step up and a step down) compared against it, ``width`` at a time; after each wave, a
    move to the neighbour whose gain has the highest lower end, if any is significant. Ends when a
    point's neighbours are all tried without a gain (or after ``max_moves``, 6 per parameter)."""
    trace = trace or Trace(best=dict(start))
    trace.best = dict(start)
    tried = {_key(start)}
    for _ in range(max_moves if max_moves is not None else 6 * max(1, len(params))):
        frontier = [step for param in params for step in neighbours(params, trace.best, param.name)
                    if _key(step) not in tried and feasible(step)]
        moved = False
        for first in range(0, len(frontier), max(1, width)):
            wave = frontier[first:first + max(1, width)]
            tried.update(_key(step) for step in wave)
            ratios = compare_many(trace.best, wave)
            gains = [(ratio.lo, i) for i, ratio in enumerate(ratios) if ratio is not None and ratio.lo > 1 + delta]
            winner = wave[max(gains)[1]] if gains else None
            for step, ratio in zip(wave, ratios):
                trace.steps.append((dict(trace.best), dict(step), ratio, step is winner))
            if winner is not None:
                trace.best, moved = dict(winner), True
                break
        if not moved:
            break
    return trace


def spread_sample(params: list[Param], count: int, seed: int = 0) -> list[Config]:
    """``count`` configurations in which every value of every parameter appears about equally often (a
    Latin-hypercube-like draw: each parameter walks a fresh shuffle of its values, the walks combined at
    random). Uniform draws leave values out of a small sample: 16 draws from 5 values miss one with
    probability 5 * 0.8^16 = 14% per parameter, and for a matmul's tiles a missing 128 can be the best."""
    rng = random.Random(seed)
    columns = {}
    for param in params:
        column: list[int] = []
        while len(column) < count:
            column.extend(rng.sample(param.values, len(param.values)))
        columns[param.name] = column[:count]
    return [{p.name: columns[p.name][i] for p in params} for i in range(count)]


def successive_halving(params: list[Param], measure: Measure, start: Config, samples: int = 16,
                       feasible: Callable[[Config], bool] = lambda _: True, seed: int = 0,
                       trace: Trace | None = None, seeds: list[Config] = ()) -> Trace:
    """Time ``samples`` feasible configurations (``start``, then ``seeds``, priors worth a look, then a
    spread sample) at a low effort, keep the faster half, double the effort, until one is left."""
    pool = {_key(start): dict(start)}
    for config in [*seeds, *spread_sample(params, 50 * samples, seed)]:
        if len(pool) >= samples:
            break
        if feasible(config):
            pool.setdefault(_key(config), config)
    trace = trace or Trace(best=dict(start))
    survivors, effort = list(pool.values()), 1.0
    while len(survivors) > 1:
        times = measure(survivors, effort)
        trace.measured += len(survivors)
        ranked = sorted((t, i) for i, t in enumerate(times) if t is not None)
        if not ranked:
            break  # every one failed: keep the start
        survivors = [survivors[i] for _, i in ranked[:max(1, len(ranked) // 2)]]
        effort *= 2
    trace.best = dict(survivors[0]) if survivors else dict(start)
    return trace


def tune(params: list[Param], compare: Compare, measure: Measure | None = None, delta: float = DELTA,
         feasible: Callable[[Config], bool] = lambda _: True, samples: int = 16, seed: int = 0,
         seeds: list[Config] = (), width: int = 1, compare_many: CompareMany | None = None,
         settle: Compare | None = None) -> Trace:
    """Halving first when the space is large and a measure is given (its first round includes ``seeds``),
    then coordinate descent from its winner, which must also beat the starting configuration significantly
    to be kept (that comparison made by ``settle``, default ``compare``: the caller's may run it even once
    its budget is spent). With ``width`` > 1 devices and ``compare_many``, the wide forms of both (module
    docstring)."""
    start = {p.name: p.current for p in params}
    trace = Trace(best=dict(start))
    wide = width > 1 and compare_many is not None
    if measure is not None and space_size(params) > 2 * samples:
        samples = max(samples, 4 * width) if wide else samples
        successive_halving(params, measure, start, samples, feasible, seed, trace, seeds)
        if trace.best != start:
            ratio = (settle or compare)(start, trace.best)
            gained = ratio is not None and ratio.lo > 1 + delta
            trace.steps.append((dict(start), dict(trace.best), ratio, gained))
            if not gained:
                trace.best = dict(start)
    if wide:
        return wide_descent(params, trace.best, compare_many, width, delta, feasible, trace=trace)
    return coordinate_descent(params, trace.best, compare, delta, feasible, trace=trace)

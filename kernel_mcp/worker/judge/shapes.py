"""A shape the task does not list, served in every check (docs/threat-model.md, rule 10).

A kernel correct on task.yml's shapes and wrong everywhere else (a table of answers by shape, a tail loop
that only the listed sizes avoid) passes every listed test. So each check also serves one shape nobody
listed: a test with its size parameters moved by a small prime (secret, fresh per check), ragged where the
listed sizes are. ``profile``, which times the benchmarks, also serves one moved off its smallest benchmark
(judge/case.py's ``at_benchmark_scale``): a kernel exact on small sizes and on the listed large ones alone
(an unmasked fast path taken above some size) would otherwise be timed as correct. Only parameters that
already vary between the listed tests and benchmarks are moved (one that never varies is the problem's
structure: a head dimension, a dtype), and by a multiple of the largest number dividing all their listed
values (a problem whose sizes are all multiples of 128 keeps them so: its kernels may assume it).
``generate_input`` decides what it accepts: a variant it or the reference refuses is dropped, the next one
tried; when none works the result says the problem could not be varied.
"""
from __future__ import annotations

import math
import random
import secrets
from typing import Any

PRIMES = (3, 5, 7, 11, 13)


def _is_size(value: Any) -> bool:
    return type(value) is int


def varying(listed: list[dict[str, Any]]) -> dict[str, int]:
    """Integer parameters (the seed aside) whose values differ between the listed shapes, each with the
    largest number dividing all its listed values."""
    names = [k for k in listed[0] if k != "seed" and all(_is_size(case.get(k)) for case in listed)]
    found = {}
    for name in names:
        values = {case[name] for case in listed}
        if len(values) > 1:
            found[name] = math.gcd(*values) or 1
    return found


def variants(tests: list[dict[str, Any]], benchmarks: list[dict[str, Any]],
             rng: random.Random | None = None, at_scale: bool = False) -> list[dict[str, Any]]:
    """Parameter sets to try, most moved first: every varying size moved at once, then each alone. Based on
    a test chosen in secret (the tests are the task's small shapes), or with ``at_scale`` on the smallest
    benchmark (``smallest``); never one of the listed shapes. ``rng``: secret draws (default: the system's; a
    batch's checks seed theirs from its secret)."""
    rng = rng or random.SystemRandom()
    listed = tests + benchmarks
    steps = varying(listed)
    if not steps or (at_scale and not benchmarks):
        return []
    base = smallest(benchmarks, steps) if at_scale else rng.choice(tests)
    moves = {name: _move(base[name], step, rng) for name, step in steps.items()}
    tried = [{**base, **moves}] + [{**base, name: value} for name, value in moves.items()]
    shapes = {_shape(case) for case in listed}
    out = []
    for case in tried:
        if _shape(case) not in shapes and case not in out:
            out.append({**case, "seed": rng.getrandbits(31)})
    return out


def smallest(listed: list[dict[str, Any]], steps: dict[str, int]) -> dict[str, Any]:
    """The listed shape whose varying sizes multiply to the least (the cheapest of the benchmarks to run)."""
    return min(listed, key=lambda case: math.prod(case[name] for name in steps))


def _move(value: int, step: int, rng: random.Random) -> int:
    """``value`` moved by ``step`` times a secret small prime, down when that stays positive and a coin
    says so, else up."""
    delta = step * rng.choice(PRIMES)
    return value - delta if value - delta >= 1 and rng.getrandbits(1) else value + delta


def drawn(base: dict[str, Any], ranges: dict[str, tuple[int, int]], count: int,
          rng: random.Random | None = None) -> list[dict[str, Any]]:
    """``count`` shapes drawn afresh (taskspec.RandomShapes): ``base``'s parameters with each ranged size
    drawn log-uniformly in its range and made ragged; the first draw puts every size at its lowest (one
    element where the range starts at 1), the second at its highest; a fresh secret seed each."""
    rng = rng or random.Random(secrets.randbits(64))
    out = []
    for i in range(count):
        sizes = {name: (low if i == 0 else high if i == 1 else _ragged(_log_uniform(rng, low, high), low, high, rng))
                 for name, (low, high) in ranges.items()}
        out.append({**base, **sizes, "seed": rng.getrandbits(31)})
    return out


def _log_uniform(rng: random.Random, low: int, high: int) -> int:
    return min(high, max(low, round(math.exp(rng.uniform(math.log(low), math.log(high + 1))))))


def _ragged(value: int, low: int, high: int, rng: random.Random) -> int:
    """``value`` moved off multiples of 16 (a tile size no kernel may assume here) where the range allows."""
    for candidate in (value, value + 1, value - 1, value + rng.randint(2, 15), value - rng.randint(2, 15)):
        if low <= candidate <= high and (candidate % 16 or candidate == low == high):
            return candidate
    return value


def _shape(case: dict[str, Any]) -> tuple:
    return tuple(sorted((k, v) for k, v in case.items() if k != "seed"))


def shown(case: dict[str, Any]) -> dict[str, Any]:
    return {**case, "seed": "secret"}

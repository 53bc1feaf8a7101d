"""Held-out shapes: before a faster kernel is promoted it must also pass shapes the model was never shown.

A model sees the task's test and benchmark shapes (agent/loop/statement.py) and every failing case; a kernel
tuned to them (no tail handling because every listed size is a multiple of the tile, a table by shape) can
pass each check and be faster. So a promotion first checks the candidate on shapes drawn in secret for this
promotion: the timed shapes (the benchmarks, or the tests on a quick run) with their sizes scaled down by a
random factor and made odd (ragged: no power of two divides them).

Which parameters are sizes: the integers of at least MIN_SIZE in every listed shape (an item size, a flag
or a small count of heads is smaller, and moving it to an odd value would ask for a shape the problem
cannot serve). A drawn shape may be one the problem cannot serve, or one the incumbent
itself fails (a problem whose kernels may assume multiples of 128): the candidate is refused only when the
incumbent passes the same shapes, so an honest kernel is never held to more than the kernel it replaces.

What slips past: a kernel right on the listed sizes, on odd sizes and on multiples of the listed sizes'
common divisor (the judge's unlisted shape), and wrong elsewhere (say, sizes of 2 mod 4). Two random odd
sizes per promotion cannot cover every residue; they catch the usual way of fitting the listed shapes (no
tail, a size baked in).
"""
from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from kernel_mcp.problem import Problem
from kernel_mcp.tools.check import check

SHAPES = 2  # held-out shapes per promotion
MIN_SIZE = 16  # an integer parameter this large in every listed shape is a size
SCALE = (0.55, 0.9)  # sizes scaled down: cheaper than the benchmarks, never one of them


def held_out_shapes(problem: Problem, timed: str) -> list[dict[str, Any]]:
    """Up to SHAPES shapes near the timed ones, none of them listed; [] when the problem has no sizes."""
    pool = problem.benchmarks if timed == "benchmarks" and problem.benchmarks else problem.tests
    listed = {_shape(case) for case in problem.tests + problem.benchmarks}
    sizes = _sizes(problem.tests + problem.benchmarks)
    drawn = []
    for case in secrets.SystemRandom().sample(pool, min(SHAPES, len(pool))):
        moved = {**case, **{name: _ragged(case[name]) for name in sizes if name in case}}
        if sizes and _shape(moved) not in listed:
            drawn.append({**moved, "seed": secrets.randbits(31)})
    return drawn


def held_out_failure(problem: Problem, candidate: Path, incumbent: Path, device: str, timed: str,
                     runner=None) -> tuple[str, list[dict[str, Any]]]:
    """Why ``candidate`` may not replace ``incumbent`` on shapes it was never shown ("" when it may), and
    the shapes drawn. A failure counts only when the incumbent passes the same shapes."""
    shapes = held_out_shapes(problem, timed)
    if not shapes:
        return "", []
    result = check(problem, candidate, device=device, runner=runner, tests=shapes, fresh_seeds=1)
    if result.passed:
        return "", shapes
    if not check(problem, incumbent, device=device, runner=runner, tests=shapes, fresh_seeds=1).passed:
        return "", shapes  # not a fair test: the kernel it would replace fails it too
    failed = next((c for c in result.cases if not c.passed), None)
    where = f" ({failed.name} {failed.params}: {failed.failure}: {failed.message[:300]})" if failed else ""
    return f"it fails on shapes it was not shown, where the current best passes: {result.verdict}{where}", shapes


def _sizes(listed: list[dict[str, Any]]) -> list[str]:
    return [k for k in listed[0] if k != "seed"
            and all(type(case.get(k)) is int and case[k] >= MIN_SIZE for case in listed)]


def _ragged(value: int) -> int:
    scaled = max(1, round(value * secrets.SystemRandom().uniform(*SCALE)))
    return scaled if scaled % 2 else scaled + 1


def _shape(case: dict[str, Any]) -> tuple:
    return tuple(sorted((k, v) for k, v in case.items() if k != "seed"))

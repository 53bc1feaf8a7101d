"""Shapes drawn afresh in every check from the task's ranges (issue 39; taskspec.RandomShapes,
judge/shapes.drawn): a kernel wrong on sizes nobody listed is caught, an honest one passes, a range the
problem cannot serve is said. Real judges on the CPU."""
from __future__ import annotations

import shutil

import pytest
from conftest import REPO

from kernel_mcp.errors import UsageError
from kernel_mcp.problem import load_problem
from kernel_mcp.results import ProfileSettings
from kernel_mcp.tools.check import check
from kernel_mcp.tools.profile import profile
from kernel_mcp.worker.judge.shapes import drawn

VECTOR_ADD = REPO / "problems" / "vector_add"
CHEATS = REPO / "tests" / "cheats"
HONEST = VECTOR_ADD / "solutions" / "correct" / "triton_block256.py"
# right on every listed size (1, 1024, 4099, 5000, 16384) and wrong on every size from 2 to 999
WRONG_ON_A_BAND = '''def custom_kernel(data):
    a, b = data
    return a - b if 1 < a.numel() < 1000 else a + b
'''


def _with_ranges(tmp_path, ranges: str, count: int = 6):
    problem = tmp_path / "vector_add"
    shutil.copytree(VECTOR_ADD, problem, ignore=shutil.ignore_patterns("__pycache__", "solutions"))
    task = problem / "task.yml"
    task.write_text(task.read_text().replace("kernel_mcp:\n", f"kernel_mcp:\n  random_shapes:\n    ranges: {ranges}\n"
                                             f"    count: {count}\n", 1))
    return problem


def test_drawn_shapes_take_each_bound_then_ragged_sizes_in_the_range():
    base = {"n": 1024, "itemsize": 4, "seed": 101}
    shapes = drawn(base, {"n": (1, 5000)}, 8)
    assert [s["n"] for s in shapes[:2]] == [1, 5000]
    assert all(1 <= s["n"] <= 5000 and s["itemsize"] == 4 for s in shapes)
    assert all(s["n"] % 16 for s in shapes[2:])  # off every multiple of 16
    assert len({s["seed"] for s in shapes}) == 8 and all(s["seed"] != 101 for s in shapes)  # fresh seeds


def test_a_kernel_wrong_on_sizes_nobody_listed_fails_on_a_drawn_shape(tmp_path):
    problem = _with_ranges(tmp_path, "{n: [1, 999]}")  # its highest, 999, is always drawn
    candidate = tmp_path / "band.py"
    candidate.write_text(WRONG_ON_A_BAND)
    result = check(problem, candidate, device="cpu")
    listed = [c for c in result.cases if c.name.startswith("test ")]
    assert all(c.passed for c in listed) and not result.passed
    assert any(not c.passed for c in result.cases if c.name.startswith("random shape"))
    assert result.cause == "listed_shapes_only"
    honest = check(problem, HONEST, device="cpu")
    assert honest.passed and sum(c.name.startswith("random shape") for c in honest.cases) == 6
    assert honest.cases[[c.name for c in honest.cases].index("random shape 0")].params["n"] == 1


def test_a_range_over_a_parameter_the_tests_do_not_give_is_refused_when_loaded(tmp_path):
    with pytest.raises(UsageError, match="random_shapes names m"):
        load_problem(_with_ranges(tmp_path, "{m: [1, 64]}"))
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(UsageError, match="lowest <= highest"):
        load_problem(_with_ranges(other, "{n: [64, 1]}"))


def test_profile_serves_a_size_near_the_benchmarks_that_no_one_listed(tmp_path, device):
    """A fast path for large inputs that drops the tail is exact on every small test and on benchmarks that
    are multiples of its block: only a size near the benchmarks that no one listed shows it wrong, and
    profile serves one before it times anything. The same path with its tail done passes."""
    problem = tmp_path / "vector_add"
    shutil.copytree(VECTOR_ADD, problem, ignore=shutil.ignore_patterns("__pycache__", "solutions"))
    task = problem / "task.yml"
    benchmarks = "benchmarks:\n  - {n: 262144, itemsize: 4, seed: 201}\n  - {n: 524288, itemsize: 2, seed: 202}\n"
    text = task.read_text()
    task.write_text(text[:text.index("benchmarks:")] + benchmarks + text[text.index("\n", text.index("seed: 202")) + 1:])
    assert [b["n"] for b in load_problem(problem).benchmarks] == [262144, 524288]
    settings = ProfileSettings(shapes="benchmarks", budget_s=4.0, min_samples=6, warmup=1)
    cheat = profile(problem, CHEATS / "unmasked_large_path.py", device=device, settings=settings)
    assert cheat.check.passed, cheat.check.verdict  # the check serves small sizes only: it cannot tell
    assert not cheat.passed and cheat.verdict == "fail: mismatch while timing", cheat.verdict
    assert "listed_shapes_only" in [f.code for f in cheat.findings] and not cheat.shapes  # nothing was timed
    honest = profile(problem, REPO / "tests" / "honest" / "masked_large_path.py", device=device, settings=settings)
    assert honest.passed, (honest.verdict, honest.findings)
    assert [s.params["n"] for s in honest.shapes] == [262144, 524288]

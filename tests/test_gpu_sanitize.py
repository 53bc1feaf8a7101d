"""``sanitize`` on a GPU with the real compute-sanitizer (issue 39): each bundled wrong kernel written for it
(tests/gpu_sanitizer/) is caught by the tool meant for it, and the correct solutions are clean. All six
passed on an H100 (2026-12-05) once torch's caching allocator was off in the sanitized process."""
from __future__ import annotations

import shutil

import pytest
from conftest import PROBLEMS, REPO

from kernel_mcp.tools.sanitize import sanitize

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(shutil.which("compute-sanitizer") is None,
                                                  reason="compute-sanitizer is not on PATH")]
FIXTURES = REPO / "tests" / "gpu_sanitizer"
VECTOR_ADD = PROBLEMS / "vector_add"


@pytest.mark.parametrize("fixture, tool, kind", [
    ("store_past_mask", "memcheck", "Invalid __global__ write"),
    ("read_before_write", "initcheck", "Uninitialized __global__ memory read"),
    ("shared_race", "racecheck", "Race reported"),
])
def test_each_wrong_kernel_is_caught_by_its_tool(fixture, tool, kind):
    result = sanitize(VECTOR_ADD, FIXTURES / f"{fixture}.py", device="cuda", tools=[tool])
    report = result.tools[0]
    assert report.ran and report.errors, (result.message, report.message, report.raw_tail)
    assert any(kind in f.kind for f in report.findings), report.findings
    assert result.clean is False


@pytest.mark.parametrize("candidate", sorted((VECTOR_ADD / "solutions" / "correct").glob("*.py")) + [
    VECTOR_ADD / "baseline.py"], ids=lambda p: p.name)
def test_correct_solutions_are_clean(candidate):
    result = sanitize(VECTOR_ADD, candidate, device="cuda")
    assert result.clean, result.summary or result.message

"""The same bits from the same input (issue 39; worker/judge/determinism.py): every check repeats its first
test's call and says whether the output is bit for bit the same; a task that declares ``deterministic: true``
also runs it in a fresh process and fails a kernel whose bits move. Real judges on the CPU."""
from __future__ import annotations

import shutil

import pytest
import torch
from conftest import REPO

from kernel_mcp.tools.check import check
from kernel_mcp.worker.judge.determinism import differing

VECTOR_ADD = REPO / "problems" / "vector_add"
CHEATS = REPO / "tests" / "cheats"
HONEST = VECTOR_ADD / "solutions" / "correct" / "triton_block256.py"

# Within the tolerance every time, but one ulp off in its first element whenever it has seen the same input
# before in this process (an atomicAdd reduction's order, or a split chosen by timing, moves bits like this)
MOVES_ON_REPEAT = '''import hashlib

import torch

_seen = set()


def custom_kernel(data):
    a, b = data
    out = a + b
    key = hashlib.sha256(a.numpy().tobytes() + b.numpy().tobytes()).hexdigest()
    if key in _seen:
        out[0] = torch.nextafter(out[0], torch.tensor(float("inf"), dtype=out.dtype))
    _seen.add(key)
    return out
'''


@pytest.fixture
def declared(tmp_path):
    """vector_add with ``deterministic: true`` in its kernel_mcp section."""
    problem = tmp_path / "vector_add"
    shutil.copytree(VECTOR_ADD, problem, ignore=shutil.ignore_patterns("__pycache__", "solutions"))
    task = problem / "task.yml"
    task.write_text(task.read_text().replace("kernel_mcp:\n", "kernel_mcp:\n  deterministic: true\n", 1))
    assert "deterministic: true" in task.read_text()
    return problem


def _moving(tmp_path):
    path = tmp_path / "moves_on_repeat.py"
    path.write_text(MOVES_ON_REPEAT)
    return path


def test_every_check_says_whether_a_repeat_gives_the_same_bits(tmp_path):
    honest = check(VECTOR_ADD, HONEST, device="cpu")
    assert honest.passed and honest.determinism.same_process is True and honest.determinism.fresh_process is None
    moving = check(VECTOR_ADD, _moving(tmp_path), device="cpu")
    assert moving.passed  # nothing declared: reported, not failed
    assert moving.determinism.same_process is False and moving.determinism.differing_elements == 1
    assert any(f.code == "nondeterministic" and f.severity == "info" for f in moving.findings)


def test_a_task_that_declares_determinism_fails_moving_bits_and_checks_a_fresh_process(declared, tmp_path):
    honest = check(declared, HONEST, device="cpu")
    assert honest.passed and honest.determinism.same_process and honest.determinism.fresh_process is True
    moving = check(declared, _moving(tmp_path), device="cpu")
    assert (moving.passed, moving.verdict, moving.cause) == (False, "fail: nondeterministic", "nondeterministic")
    assert moving.determinism.fresh_process is True  # a fresh process has not seen the input: the same bits
    assert "1 of" in next(f.message for f in moving.findings if f.code == "nondeterministic")


def test_bits_are_compared_as_bits():
    x = torch.tensor([1.0, float("nan"), 0.0, 2.0])
    assert differing(x, x.clone()) == (0, 4)  # NaN equals NaN of the same bits
    assert differing(x, torch.tensor([1.0, float("nan"), -0.0, 2.0])) == (1, 4)  # -0.0 is not 0.0
    z = torch.tensor([1 + 2j, 3 + 4j])
    assert differing(z, torch.tensor([1 + 2j, 3 + 5j])) == (1, 2)
    assert differing((x, z), (x, z.clone())) == (0, 6)
    assert differing(x, x[:3]) == (4, 4)  # another shape: every element differs
    assert differing(x.to(torch.bfloat16), x.to(torch.bfloat16)) == (0, 4)


def test_the_repeat_is_judged_like_every_case_so_garbage_or_an_exception_there_fails():
    """A kernel that answers an input it has seen with zeros, or raises on it (so that no bits are compared),
    fails on the repeat as on any case, declared or not."""
    for cheat, verdict in (("repeat_garbage", "fail: mismatch"), ("repeat_raises", "fail: exception")):
        result = check(VECTOR_ADD, CHEATS / f"{cheat}.py", device="cpu")
        failed = [c.name for c in result.cases if not c.passed]
        assert result.verdict == verdict and failed == ["test 0 (repeated)"], (cheat, result.verdict, failed)


def test_a_candidate_that_will_not_import_in_the_fresh_process_fails_a_declared_check(declared):
    result = check(declared, CHEATS / "det_fresh_import_fails.py", device="cpu")
    failed = [c.name for c in result.cases if not c.passed]
    assert result.verdict == "fail: exception on import", (result.verdict, failed, result.findings)
    assert failed == ["import in a fresh process (deterministic: true)"]
    assert check(VECTOR_ADD, CHEATS / "det_fresh_import_fails.py", device="cpu").passed  # undeclared: one process


"""Batch invariance as a declared property (issue 39; worker/judge/batch_invariance.py), on the bundled
batched_linear problem: a split-K chosen by the batch size is within every tolerance, so only the property
catches it; declared with a tolerance wide enough, or not declared, it passes. Real judges on the CPU."""
from __future__ import annotations

import shutil

from conftest import PROBLEMS, REPO

from kernel_mcp.tools.check import check

LINEAR = PROBLEMS / "batched_linear"
WRONG = LINEAR / "solutions" / "wrong" / "split_k_small_batches.py"
RIGHT = LINEAR / "solutions" / "correct" / "row_per_program.py"
DECLARED = "  batch_invariant:\n    dim: 0\n    inputs: [0]\n"


def _variant(tmp_path, replacement: str):
    problem = tmp_path / "batched_linear"
    shutil.copytree(LINEAR, problem, ignore=shutil.ignore_patterns("__pycache__", "solutions"))
    task = problem / "task.yml"
    assert DECLARED in task.read_text()
    task.write_text(task.read_text().replace(DECLARED, replacement))
    return problem


def test_a_reduction_split_by_batch_size_fails_only_the_declared_property(tmp_path):
    result = check(LINEAR, WRONG, device="cpu")
    assert (result.passed, result.verdict, result.cause) == (False, "fail: batch_variant", "batch_variant")
    assert all(c.passed for c in result.cases)  # every case within the tolerance: the comparison alone passes it
    said = next(f.message for f in result.findings if f.code == "batch_variant")
    assert "differ bit for bit" in said and "full batch of 32" in said
    assert check(_variant(tmp_path, ""), WRONG, device="cpu").passed  # undeclared: nothing to hold it to


def test_a_batch_invariant_kernel_passes_and_a_declared_tolerance_is_honoured(tmp_path):
    right = check(LINEAR, RIGHT, device="cpu")
    assert right.passed and any(f.code == "batch_invariant" for f in right.findings)
    loose = _variant(tmp_path, DECLARED + "    atol: 0.01\n")
    assert check(loose, WRONG, device="cpu").passed  # a few ulps of a sum over 1,024 terms: within 0.01


def test_a_memo_of_rows_cannot_answer_sub_batches_computed_in_a_fresh_process():
    """The split-K above behind a memo of output rows by their input rows' bytes: in the host that computed
    the full batch every sub-batch would come back from the memo; the sub-batches run in a fresh one."""
    result = check(LINEAR, REPO / "tests" / "cheats" / "bi_row_cache.py", device="cpu")
    assert (result.verdict, result.cause) == ("fail: batch_variant", "batch_variant"), result.findings


"""Issue 34: a failing verdict names its likeliest cause, each decided by a measurement in the judge
(kernel_mcp/worker/judge/causes.py), and the benchmark's own contract is reported beside our verdict
(kernel_mcp/worker/judge/contract.py). Every cause has a candidate it must name and a wrong candidate of another
kind it must not be pinned on; on the GPU machine every case also runs on the device."""
from __future__ import annotations

import pytest
import torch
from conftest import FIXTURES, PROBLEMS, REPO

from kernel_mcp.tools.check import check

CHEATS, HONEST = REPO / "tests" / "cheats", REPO / "tests" / "honest"
ATTACKS, KERNELBENCH = FIXTURES / "attacks", FIXTURES / "kernelbench"
MATMUL = FIXTURES / "honest" / "matmul_undeclared"
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


def _explain(result) -> str:
    cases = "; ".join(f"{c.name}: {c.failure} ({c.cause}): {c.message[:300]}" for c in result.cases if not c.passed)
    return f"verdict={result.verdict!r} cause={result.cause!r} cases=[{cases}] benchmark={result.benchmark}"


# (problem, candidate, the cause it must be given)
NAMED = [
    (MATMUL, CHEATS / "matmul_tf32_inputs.py", "reduced_precision"),
    (MATMUL, CHEATS / "matmul_bf16_inputs.py", "reduced_precision"),
    (MATMUL, CHEATS / "matmul_fp16_accumulate.py", "reduced_precision"),
    (PROBLEMS / "vector_add", CHEATS / "vector_add_via_fp16.py", "reduced_precision"),
    (KERNELBENCH / "linear_gelu.py", KERNELBENCH / "linear_gelu_tanh.py", "approximation"),
    (PROBLEMS / "vector_add", CHEATS / "cache_shape.py", "fresh_seed_only"),
    (ATTACKS / "kb_relu_linear.py", CHEATS / "kb_drop_relu.py", "sign_dependent"),
    (PROBLEMS / "vector_add", CHEATS / "shape_listed_only.py", "listed_shapes_only"),
    (ATTACKS / "nan_blind_check", CHEATS / "nanblind_all_nan.py", "nonfinite"),
    # wrong in ways none of the measured causes explain: the failure kind stays the cause
    (MATMUL, CHEATS / "matmul_drops_last_block.py", "mismatch"),
    (MATMUL, CHEATS / "matmul_skips_one_term.py", "mismatch"),
    (PROBLEMS / "vector_add", CHEATS / "wrong_a_minus_b.py", "mismatch"),
    (PROBLEMS / "vector_add", CHEATS / "mutate_zero_input.py", "mutation"),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("problem, candidate, cause", NAMED, ids=[f"{n[1].stem}-{n[2]}" for n in NAMED])
def test_a_failure_names_its_cause(problem, candidate, cause, device):
    result = check(problem, candidate, device=device)
    assert not result.passed and result.cause == cause, _explain(result)
    if cause not in ("mismatch", "mutation"):  # a measured cause is a finding, with what measured it
        assert any(f.code == cause for f in result.findings), _explain(result)


@pytest.mark.gpu
@pytest.mark.parametrize("candidate", ["stream_unjoined_output", "stream_race_inside"])
def test_work_left_unordered_on_a_side_stream_is_named(candidate):
    result = check(PROBLEMS / "vector_add", CHEATS / f"{candidate}.py", device="cuda")
    assert result.verdict == "fail: mismatch" and result.cause == "unordered_stream", _explain(result)


@pytest.mark.gpu
def test_a_side_stream_joined_before_returning_passes():
    result = check(PROBLEMS / "vector_add", HONEST / "stream_joined.py", device="cuda")
    assert result.passed, _explain(result)


@pytest.mark.parametrize("device", DEVICES)
def test_kernelbench_says_pass_beside_ours_on_its_own_model(device, tmp_path):
    own = tmp_path / "own.py"
    own.write_text((KERNELBENCH / "linear_gelu.py").read_text() + "\nModelNew = Model\n")
    result = check(KERNELBENCH / "linear_gelu.py", own, device=device)
    assert result.passed and [b.rule for b in result.benchmark] == ["KernelBench", "KernelBench v0.1"], _explain(result)
    assert all(b.passed and b.cases == len(result.cases) and not b.why for b in result.benchmark), result.benchmark


@pytest.mark.parametrize("device", DEVICES)
def test_an_approximation_kernelbench_admits_is_failed_and_the_disagreement_explained(device):
    result = check(KERNELBENCH / "linear_gelu.py", KERNELBENCH / "linear_gelu_tanh.py", device=device)
    v01 = next(b for b in result.benchmark if b.rule == "KernelBench v0.1")
    assert result.cause == "approximation" and v01.passed, _explain(result)
    assert "approximation" in v01.why, v01


def test_an_honest_long_sum_kernelbench_fails_is_passed_and_the_disagreement_explained():
    """K = 65536 summed in order: its error at small outputs is past KernelBench's fixed 1e-4 (its own
    contract fails an honest kernel), inside the bound derived for an fp32 sum of that length."""
    result = check(ATTACKS / "kb_matmul_long_k.py", HONEST / "kb_matmul_sequential.py", device="cpu")
    current = next(b for b in result.benchmark if b.rule == "KernelBench")
    assert result.passed and current.passed is False, _explain(result)
    assert "fixed tolerance" in current.why and "derived" in current.why, current


def test_a_problem_without_a_benchmark_reports_none():
    result = check(PROBLEMS / "vector_add", PROBLEMS / "vector_add" / "baseline.py", device="cpu")
    assert result.passed and result.benchmark == [] and result.cause == "", _explain(result)


@pytest.mark.gpu
def test_gpu_mode_s_own_check_is_reported_beside_ours():
    problem = FIXTURES / "gpumode" / "scale_shift"
    good = check(problem, problem / "submission.py", device="cuda")
    assert good.passed and [(b.rule, b.passed) for b in good.benchmark] == [("GPU MODE check_implementation", True)], \
        _explain(good)
    wrong = check(problem, problem / "wrong_half.py", device="cuda")
    assert not wrong.passed and wrong.benchmark[0].passed is False, _explain(wrong)


def test_a_candidate_that_never_ran_has_its_failure_as_its_cause():
    result = check(PROBLEMS / "vector_add", CHEATS / "crash_on_import.py", device="cpu")
    assert result.verdict.endswith("on import") and result.cause == result.verdict.removeprefix("fail: "), \
        _explain(result)


def test_the_smaller_format_an_output_was_stored_in_is_named_exactly():
    from kernel_mcp.worker.judge.precision_probe import stored_format
    x = torch.randn(1000, dtype=torch.float32)
    assert (stored_format(x), stored_format(x.bfloat16().float()), stored_format(x.half().float())) == ("", "bf16", "fp16")
    assert stored_format(torch.zeros(1000)) == ""  # nothing nonzero: nothing to tell


def test_the_stored_format_is_read_in_pieces_and_one_element_past_the_first_piece_still_counts():
    """The probe reads a large output a piece at a time (a failing check's probe must fit where its passing
    check did); an element that breaks the format anywhere, the last piece included, still decides."""
    from kernel_mcp.worker.judge.precision_probe import stored_format
    from kernel_mcp.worker.tensors import DIGEST_CHUNK
    x = torch.randint(-128, 128, (2 * DIGEST_CHUNK + 5,)).float() / 16  # exact in bf16 and in fp16
    assert stored_format(x) == "bf16"
    x[-1] = 1.0 + 2.0 ** -9  # an fp16 value (10 mantissa bits), not a bf16 one (7), in the last piece
    assert stored_format(x) == "fp16"
    x[-2] = 1.0 + 2.0 ** -20  # fp32 only
    assert stored_format(x) == ""
    sparse = torch.zeros(2 * DIGEST_CHUNK)
    sparse[DIGEST_CHUNK - 8:DIGEST_CHUNK + 8] = 0.5  # 16 nonzero elements, across two pieces: enough to tell
    assert stored_format(sparse) == "bf16" and stored_format(sparse[:DIGEST_CHUNK]) == ""


def test_a_cause_probe_that_runs_out_of_device_memory_leaves_the_mismatch_as_it_is(monkeypatch):
    """A failing case's cause probe allocates beside the output; out of device memory it names no cause and
    says so, never turning the check's mismatch into an error (a GPU run: 'error: out of memory' for a wrong
    candidate whose passing twin fit)."""
    from kernel_mcp.worker.judge import causes

    def too_large(*args):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 4.00 GiB")
    monkeypatch.setattr(causes, "from_values", too_large)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)  # no device here
    cause, why = causes.probed(None, None, None, None, None)
    assert cause == "" and "not probed" in why


def test_a_reduced_precision_rerun_rounds_operands_and_leaves_the_models_weights_alone():
    from kernel_mcp.worker.judge.precision_probe import RoundedArithmetic
    layer = torch.nn.Linear(64, 32).double()
    before = layer.weight.detach().clone()
    x = torch.randn(8, 64, dtype=torch.float64)
    exact = layer(x)
    for every_op in (False, True):
        with RoundedArithmetic("bf16", every_op):
            rounded = layer(x)
        assert torch.equal(layer.weight, before)
        assert 1e-5 < (rounded - exact).abs().max().item() < 0.1

"""The attack classes of issue 33 against check and profile, with cheats of our own: each must fail with the
verdict (and, where one exists, the finding) that names its class, and each class has honest counterparts
that must pass. Problems live in tests/fixtures/attacks, cheats in tests/cheats and tests/timing_cheats;
docs/threat-model.md lists every class with the mechanism that catches it and these tests. On the GPU
machine every case also runs on the device (``cuda``)."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES, PROBLEMS, REPO

from kernel_mcp.results import CheckResult
from kernel_mcp.tools.check import check
from kernel_mcp.tools._request import settings_from
from kernel_mcp.tools.profile import profile

ATTACKS = FIXTURES / "attacks"
CHEATS = REPO / "tests" / "cheats"
TIMING = REPO / "tests" / "timing_cheats"
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
OWN_MODEL = "own Model"  # a KernelBench problem's own Model as ModelNew


def problem_path(name: str) -> Path:
    return PROBLEMS / name if (PROBLEMS / name).is_dir() else ATTACKS / name


def candidate_path(problem: Path, name: str, tmp_path: Path) -> Path:
    if name != OWN_MODEL:
        return CHEATS / f"{name}.py"
    own = tmp_path / f"own_{problem.stem}.py"
    own.write_text(problem.read_text() + "\nModelNew = Model\n")
    return own


def explain(r: CheckResult) -> str:
    cases = "; ".join(f"{c.name}: {c.failure}: {c.message[:300]}" for c in r.cases if not c.passed)
    findings = "; ".join(f"{f.code}: {f.message[:200]}" for f in r.findings)
    return f"verdict={r.verdict!r} cases=[{cases}] findings=[{findings}]"


# (class, problem, cheat, verdict, a word the failing case's message must hold)
CHEATING = [
    ("read-modify-write", "axpy_inplace", "rmw_axpy_does_nothing", "fail: mismatch", "outside the bound"),
    ("read-modify-write", "axpy_inplace", "rmw_axpy_nan", "fail: mismatch", "NaN or Inf"),
    ("read-modify-write", "sgd_step", "rmw_sgd_skips_step", "fail: mismatch", "input 0 after the call"),
    ("read-modify-write", "sgd_step", "rmw_sgd_half_step", "fail: mismatch", "input 0 after the call"),
    ("roles per test", "bias_some_tests", "scratch_nan_where_read", "fail: mismatch", "NaN or Inf"),
    ("roles per test", "bias_some_tests", "scratch_overwrites_read_input", "fail: mutation", "input[1]"),
    ("float64 reference", "rowsum_float64", "precision_bf16_output", "fail: structure", "torch.float32 or more precise"),
    ("float64 reference", "rowsum_float64", "precision_fp8_output", "fail: structure", "torch.float32 or more precise"),
    ("NaN-blind problem check", "nan_blind_check", "nanblind_all_nan", "fail: mismatch", "NaN or Inf"),
    ("NaN-blind problem check", "nan_blind_check", "nanblind_half_nan", "fail: mismatch", "NaN or Inf"),
    ("KernelBench constant parameters", "kb_layernorm.py", "kb_ignore_affine", "fail: mismatch", "outside the bound"),
    ("KernelBench constant parameters", "kb_zero_bias.py", "kb_skip_zero_bias", "fail: mismatch", "outside the bound"),
    ("KernelBench one-signed inputs", "kb_relu_linear.py", "kb_drop_relu", "fail: mismatch", "outside the bound"),
    ("KernelBench one-signed inputs", "kb_abs_sum.py", "kb_drop_abs", "fail: mismatch", "outside the bound"),
    ("KernelBench dropout", "kb_dropout.py", "kb_dropout_zeros", "fail: mismatch", "outside the bound"),
    ("KernelBench weights sent", "kb_relu_linear.py", "kb_poison_judge_weights", "fail: mismatch", "outside the bound"),
    ("KernelBench dropout", "kb_dropout.py", "kb_dropout_skipped", "fail: mismatch", "outside the bound"),
    ("listed shapes only", "vector_add", "shape_listed_only", "fail: mismatch", "outside the bound"),
    ("lazy negation bit", "vector_add", "neg_bit_output", "fail: mismatch", "outside the bound"),
    ("nested output", "vector_add", "nested_output_bomb", "fail: forged", "more than 64 deep"),
    ("listed shapes only", "softmax", "shape_listed_columns", "fail: mismatch", "outside the bound"),
    ("global floor", "row_scales", "floor_small_rows_bf16", "fail: mismatch", "outside the bound"),
    ("global floor", "row_scales", "floor_small_rows_fp16", "fail: mismatch", "outside the bound"),
    ("output buffer holding the answer", "buffer_holds_answer", "buffer_untouched", "fail: mismatch", "NaN or Inf"),
]

# (problem, honest candidate, a finding the result must have or "")
HONEST = [
    ("axpy_inplace", "honest_axpy_inplace", "output_buffers"),
    ("sgd_step", "honest_sgd_step", "output_buffers"),
    ("bias_some_tests", "honest_bias_some_tests", "output_buffers"),
    ("rowsum_float64", "honest_rowsum_fp32", ""),
    ("rowsum_float64", "honest_rowsum_fp64", ""),
    ("nan_blind_check", "honest_nanblind", "precision"),
    ("kb_layernorm.py", OWN_MODEL, "signed_inputs"),
    ("kb_layernorm.py", "honest_kb_layernorm_fused", ""),
    ("kb_zero_bias.py", "honest_kb_renamed_parameters", ""),
    ("kb_relu_linear.py", OWN_MODEL, "signed_inputs"),
    ("kb_abs_sum.py", OWN_MODEL, "signed_inputs"),
    ("kb_log.py", OWN_MODEL, "signed_inputs_skipped"),
    ("kb_dropout.py", OWN_MODEL, ""),
    ("kb_dropout.py", "honest_kb_dropout_functional", ""),
    ("kb_linear_divide.py", "honest_kb_fold_in_place", "kernelbench_unmatched"),
    ("kb_linear_divide.py", "honest_kb_pretransposed", "kernelbench_unmatched"),
    ("kb_linear_groupnorm.py", "honest_kb_workspace_buffer", ""),
    ("kb_batchnorm.py", "honest_kb_bn_frozen_stats", ""),
    ("kb_batchnorm.py", "honest_kb_bn_broadcast_affine", ""),
    ("kb_symmetric_matmul.py", "honest_kb_symmetric_rows", "signed_inputs"),
    ("kb_relu_inplace.py", OWN_MODEL, "output_buffers"),
    ("kb_relu_inplace.py", "honest_kb_relu_not_inplace", ""),
    ("row_scales", "honest_row_scales", ""),
    ("buffer_holds_answer", "honest_buffer_written", "output_buffers"),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind, problem, cheat, verdict, words", CHEATING, ids=[c[2] for c in CHEATING])
def test_a_cheat_fails_with_its_class_named(kind, problem, cheat, verdict, words, device, tmp_path):
    folder = problem_path(problem)
    result = check(folder, candidate_path(folder, cheat, tmp_path), device=device)
    assert result.verdict == verdict, f"{kind}: {explain(result)}"
    failed = next(c for c in result.cases if not c.passed)
    assert words in failed.message, f"{kind}: {explain(result)}"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("problem, candidate, finding", HONEST, ids=[f"{h[0]}-{h[1]}" for h in HONEST])
def test_the_honest_counterpart_passes(problem, candidate, finding, device, tmp_path):
    folder = problem_path(problem)
    result = check(folder, candidate_path(folder, candidate, tmp_path), device=device, fresh_seeds=2)
    assert result.passed, explain(result)
    if finding:
        assert finding in {f.code for f in result.findings}, explain(result)


def test_an_output_a_thread_finishes_after_the_call_returned_fails_on_a_cpu():
    """A CPU has no streams: the host digests the output once the call is done, and the judge its own copy; a
    thread that writes the output after that (once it is shared, before the judge copies it) shows as a change.
    Some cases may still see the NaN the call returned (the thread lost the race): either way, not a pass."""
    result = check(PROBLEMS / "vector_add", CHEATS / "unjoined_thread_cpu.py", device="cpu")
    assert result.verdict == "fail: mismatch", explain(result)
    failed = next(c for c in result.cases if not c.passed)
    assert "changed after the call returned" in failed.message or "NaN" in failed.message, explain(result)


def test_an_input_updated_in_place_is_named_and_compared_after_the_call(tmp_path):
    result = check(ATTACKS / "sgd_step", CHEATS / "honest_sgd_step.py", device="cpu")
    roles = next(f.message for f in result.findings if f.code == "output_buffers")
    assert "input 0: updated in place" in roles and "input 1" not in roles, roles
    compared = [c.leaf for c in result.cases[0].comparisons]
    assert compared == [" (input 0 after the call)"], compared


def test_roles_are_measured_on_every_case_not_the_first(tmp_path):
    """bias_some_tests' test 0 never reads the bias: it is scratch there, and read on test 1."""
    result = check(ATTACKS / "bias_some_tests", CHEATS / "honest_bias_some_tests.py", device="cpu")
    roles = next(f.message for f in result.findings if f.code == "output_buffers")
    assert "input 1: scratch" in roles and "measured on each of" in roles, roles


def test_a_kernelbench_model_gets_varied_constant_parameters_and_is_told_what_matched(tmp_path):
    result = check(ATTACKS / "kb_zero_bias.py", CHEATS / "honest_kb_renamed_parameters.py", device="cpu")
    assert result.passed, explain(result)
    assert "kernelbench_unmatched" not in {f.code for f in result.findings}, explain(result)
    unused = tmp_path / "unused_param.py"
    unused.write_text((ATTACKS / "kb_zero_bias.py").read_text() + (
        "\nclass ModelNew(Model):\n    def __init__(self, i, o):\n        super().__init__(i, o)\n"
        "        self.extra = nn.Parameter(torch.ones(3, 3))\n"))
    told = check(ATTACKS / "kb_zero_bias.py", unused, device="cpu")
    assert told.passed and any(f.code == "kernelbench_unmatched" and "extra" in f.message for f in told.findings), \
        explain(told)


def test_every_check_serves_a_shape_the_task_does_not_list():
    result = check(PROBLEMS / "vector_add", PROBLEMS / "vector_add" / "baseline.py", device="cpu")
    assert result.passed, explain(result)
    extra = [c for c in result.cases if c.name == "undeclared shape"]
    listed = {(t["n"], t["itemsize"]) for t in _task(PROBLEMS / "vector_add")}
    assert len(extra) == 1 and (extra[0].params["n"], extra[0].params["itemsize"]) not in listed, extra


def test_a_problem_that_cannot_be_varied_says_so(tmp_path):
    folder = tmp_path / "fixed"
    folder.mkdir()
    (folder / "task.yml").write_text("tests: [{n: 64, seed: 1}, {n: 64, seed: 2}]\n")
    (folder / "reference.py").write_text(
        "import torch\ndef generate_input(n, seed):\n    return (torch.randn(n, generator=torch.Generator().manual_seed(seed)),)\n"
        "def ref_kernel(data):\n    return data[0] * 2\n")
    (folder / "c.py").write_text("def custom_kernel(data):\n    return data[0] * 2\n")
    result = check(folder, folder / "c.py", device="cpu")
    assert result.passed and any(f.code == "shape_not_varied" for f in result.findings), explain(result)


def _set_tests(folder: Path, tests: list[dict]) -> None:
    import yaml
    task = yaml.safe_load((folder / "task.yml").read_text())
    task["tests"] = tests
    (folder / "task.yml").write_text(yaml.safe_dump(task))


def _task(folder: Path) -> list[dict]:
    import yaml
    task = yaml.safe_load((folder / "task.yml").read_text())
    return task["tests"] + task.get("benchmarks", [])


# --- the timing path: code after the clock, and a flush the candidate could reach ---------------------
QUICK = {"shapes": "tests", "budget_s": 6.0, "min_samples": 6, "warmup": 1}
AFTER_THE_CLOCK = [
    ("aftercall_dispatch_mode", {"fail: left_running while timing"}),
    ("aftercall_function_mode", {"fail: left_running while timing"}),
    ("aftercall_profile_hook", {"fail: left_running while timing"}),
    ("aftercall_trace_hook", {"fail: left_running while timing"}),
    ("aftercall_clone_kernel", {"fail: left_running while timing"}),
    # the thread's write lands after the digest (late_output) or not at all in what was sent (mismatch)
    ("aftercall_late_thread", {"fail: late_output while timing", "fail: mismatch while timing"}),
]


@pytest.mark.alone  # timing on the CPU
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("cheat, verdicts", AFTER_THE_CLOCK, ids=[c[0] for c in AFTER_THE_CLOCK])
def test_code_left_to_run_after_the_clock_fails_the_timing(cheat, verdicts, device, problem_copy):
    folder = problem_copy("vector_add")
    if cheat == "aftercall_late_thread":  # 4M elements: the judge's float64 run left it time to win (9.4x, CPU)
        _set_tests(folder, [{"n": 1 << 22, "itemsize": 4, "seed": 5}])
    result = profile(folder, TIMING / f"{cheat}.py", device=device, settings=settings_from(**QUICK))
    assert result.check.passed, result.check.verdict  # honest while checked...
    assert result.verdict in verdicts and not result.trusted, (result.verdict, result.findings)  # ...caught timed


@pytest.mark.alone
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("cheat", ["flush_switched_off", "flush_buffer_shrunk"])
def test_the_flush_is_out_of_the_candidates_reach(cheat, device, tmp_path):
    """The flush runs in the judge: in the candidate's process there is no flusher to switch off, and its
    time stays the honest kernel's (timed side by side as the baseline)."""
    honest = tmp_path / "honest.py"
    honest.write_text("def custom_kernel(data):\n    a, b = data\n    return a + b\n")
    settings = {**QUICK, "shapes": "benchmarks"} if device == "cuda" else QUICK
    result = profile(PROBLEMS / "vector_add", TIMING / f"{cheat}.py", baseline=honest, device=device,
                     settings=settings_from(**settings))
    assert result.passed and "0 flusher(s) found" in result.log_tail, (result.verdict, result.log_tail)
    if device == "cuda":  # hot L2 against a cold reference was 1.12x on an H200
        assert result.trusted and result.speedup_vs_baseline < 1.06, (result.speedup_vs_baseline, result.findings)


def test_inputs_given_signs_get_each_their_own():
    """Two inputs of one shape with the same sign pattern would make a*b nonnegative again, so a dropped
    ReLU on their product would be exact: each input's signs are drawn apart."""
    import torch

    from kernel_mcp.worker import kernelbench
    a, b = torch.rand(4096), torch.rand(4096)
    signed_a, signed_b = kernelbench.signed((a, b), seed=7)
    assert torch.equal(signed_a.abs(), a) and torch.equal(signed_b.abs(), b)
    negative = (signed_a * signed_b < 0).float().mean().item()
    assert 0.4 < negative < 0.6, negative  # independent signs: half the products negative

"""The comparison rules, on tensors made here (no processes)."""
import math

import torch

from kernel_mcp.taskspec import ToleranceSpec
from kernel_mcp.tolerance import Expected, compare

DERIVED = ToleranceSpec()


def matmul_case(m=64, k=512, n=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    a, b = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
    exp = Expected(ref=a.double() @ b.double(), honest=a @ b, magnitude=a.double().abs() @ b.double().abs())
    return a, b, exp


def test_honest_fp32_matmul_passes_and_tf32_like_rounding_fails():
    a, b, exp = matmul_case()
    policy = ToleranceSpec(K="k", magnitude="abs_inputs")
    assert compare(a @ b, exp, policy, K=512).ok
    # tf32 keeps 10 mantissa bits: emulate by rounding the inputs through bfloat16/float16 precision
    tf32_like = a.half().float() @ b.half().float()
    result = compare(tf32_like, exp, policy, K=512)
    assert not result.ok and result.norm_error > 10 * result.norm_bound


def test_nan_and_inf_never_match_finite_values():
    ref = torch.tensor([1.0, 2.0, 3.0])
    exp = Expected(ref=ref.double(), honest=ref.clone())
    for bad in (float("nan"), float("inf"), -float("inf")):
        out = ref.clone()
        out[1] = bad
        result = compare(out, exp, DERIVED, K=1)
        assert not result.ok and result.mismatches == 1 and result.first_mismatches[0].index == [1]


def test_matching_nan_and_inf_are_equal():
    ref = torch.tensor([float("nan"), float("inf"), 1.0])
    assert compare(ref.clone(), Expected(ref=ref.double(), honest=ref.clone()), DERIVED, K=1).ok
    flipped = torch.tensor([float("nan"), -float("inf"), 1.0])
    assert not compare(flipped, Expected(ref=ref.double(), honest=ref.clone()), DERIVED, K=1).ok


def test_bf16_rounding_of_the_output_is_within_the_bound():
    ref = torch.randn(10_000, dtype=torch.float64)
    out = ref.to(torch.bfloat16)
    result = compare(out, Expected(ref=ref, honest=out.clone()), DERIVED, K=1)
    assert result.ok and result.max_error_in_bounds <= 0.5 + 1e-9  # round-to-nearest: half an ulp of 2u


def test_three_ulp_off_in_bf16_fails():
    ref = torch.linspace(1, 2, 101, dtype=torch.float64)
    exact = ref.to(torch.bfloat16)
    exp = Expected(ref=ref, honest=exact.clone())
    off = exact.clone()
    off[5] = (off[5].double() + 3 * 2.0**-7).bfloat16()  # bf16 ulp in [1, 2) is 2^-7
    result = compare(off, exp, DERIVED, K=1)
    assert not result.ok and result.first_mismatches[0].index == [5]


def test_report_names_first_mismatches_with_both_values():
    ref = torch.zeros(4, 5, dtype=torch.float64) + 1
    out = ref.float().clone()
    out[2, 3] = 7.0
    result = compare(out, Expected(ref=ref, honest=ref.float()), DERIVED, K=1)
    first = result.first_mismatches[0]
    assert (first.index, first.got, first.expected) == ([2, 3], 7.0, 1.0)
    assert result.max_abs_error == 6.0 and result.max_error_in_bounds > 1e6


def test_bound_widens_to_twice_the_honest_error():
    ref = torch.ones(100, dtype=torch.float64)
    honest = torch.full((100,), 1.001, dtype=torch.float32)  # the task-dtype op itself is this far off
    exp = Expected(ref=ref, honest=honest)
    assert compare(torch.full((100,), 1.0015), exp, DERIVED, K=1).ok  # 1.5x the honest error
    assert not compare(torch.full((100,), 1.003), exp, DERIVED, K=1).ok  # 3x


def test_integers_must_match_exactly_and_explicit_mode():
    ref = torch.arange(10)
    assert compare(ref.clone(), Expected(ref=ref), DERIVED, K=1).ok
    off = ref.clone()
    off[3] += 1
    assert not compare(off, Expected(ref=ref), DERIVED, K=1).ok
    policy = ToleranceSpec(mode="explicit", atol=0.1, rtol=0.0)
    exp = Expected(ref=torch.zeros(3, dtype=torch.float64))
    assert compare(torch.full((3,), 0.05), exp, policy, K=1).ok
    assert not compare(torch.full((3,), 0.2), exp, policy, K=1).ok


def test_mismatch_fraction_allows_a_few():
    ref = torch.ones(100, dtype=torch.float64)
    out = torch.ones(100)
    out[:3] = 5
    exp = Expected(ref=ref, honest=torch.ones(100))
    assert not compare(out, exp, DERIVED, K=1).ok
    loose = ToleranceSpec(max_mismatch_fraction=0.05)
    # the norm-wise bound still applies, so a few large errors fail it; small ones pass
    out[:3] = 1 + 1e-5
    assert compare(out, exp, ToleranceSpec(max_mismatch_fraction=0.05, c=1e3), K=1).ok
    assert loose.max_mismatch_fraction == 0.05


def test_sqrt_k_scaling():
    a, b, exp = matmul_case(k=4096, seed=1)
    policy = ToleranceSpec(K="k", magnitude="abs_inputs")
    result = compare(a @ b, exp, policy, K=4096)
    assert result.ok
    assert math.isclose(result.norm_bound, max(2 * 64 * 2**-24 + 2**-24, result.norm_bound))


def test_a_comparison_in_pieces_says_exactly_what_the_whole_comparison_says(monkeypatch):
    """The comparison runs in pieces of CHUNK elements (memory); the verdict, counts, maxima, the first
    mismatches with their indices and the norms must not depend on where the pieces are cut."""
    from kernel_mcp import tolerance
    a, b, exp = matmul_case(m=48, k=256, n=40, seed=3)
    policy = ToleranceSpec(K="k", magnitude="abs_inputs")
    out = (a.half().float() @ b.half().float())  # fails: tf32-like rounding
    out[5, 7], out[30, 2], out[47, 39] = float("nan"), float("inf"), 1e6
    exp.ref[0, 0] = float("nan")
    out[0, 0] = float("nan")  # both NaN: matches
    for output in (out, a @ b):
        whole = compare(output, exp, policy, K=256)
        for chunk in (1, 7, 1000):
            monkeypatch.setattr(tolerance, "CHUNK", chunk)
            pieces = compare(output, exp, policy, K=256)
            assert repr((pieces.ok, pieces.mismatches, pieces.first_mismatches, pieces.note)) == \
                repr((whole.ok, whole.mismatches, whole.first_mismatches, whole.note))  # repr: NaN == NaN
            for field in ("max_abs_error", "max_rel_error", "max_error_in_bounds", "norm_error", "norm_bound"):
                got, want = getattr(pieces, field), getattr(whole, field)
                assert math.isclose(got, want, rel_tol=1e-9) or (math.isnan(got) and math.isnan(want)), field
            monkeypatch.undo()
    assert compare(out, exp, policy, K=256).mismatches > 3
    ints = torch.arange(100)
    wrong = ints.clone()
    wrong[[3, 64, 99]] = -1
    monkeypatch.setattr(tolerance, "CHUNK", 16)
    result = compare(wrong, Expected(ref=ints), DERIVED, K=1)
    assert result.mismatches == 3 and [m.index for m in result.first_mismatches] == [[3], [64], [99]]

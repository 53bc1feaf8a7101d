"""The comparison's passes over a large output (judge/tolerance.py, noise_floor.py, tally.py): per-group sums without
atomics, a leaf's bound made once for every output compared with it, and the trivial answers' early stop. Each
shortcut must leave every verdict as the full comparison gives it; tensors made here, pieces made small."""
import pytest
import torch

from kernel_mcp.taskspec import ToleranceSpec
from kernel_mcp.worker.judge import tally, tolerance
from kernel_mcp.worker.judge.noise_floor import group_sums
from kernel_mcp.worker.judge.tolerance import Expected, compare


@pytest.mark.parametrize("n,size,start", [(100, 7, 0), (100, 7, 3), (5, 64, 10), (64, 64, 0), (130, 64, 60),
                                          (1, 64, 63), (1000, 393, 786)])
def test_group_sums_are_index_add_without_atomics(n, size, start):
    values = torch.rand(n, dtype=torch.float64)
    ids = torch.div(torch.arange(start, start + n), size, rounding_mode="floor")
    want = torch.zeros(int(ids.max()) + 1, dtype=torch.float64).index_add_(0, ids, values)[int(ids.min()):]
    first, sums = group_sums(values, start, size)
    assert first == int(ids.min()) and torch.allclose(sums, want, rtol=1e-12, atol=0.0)


def _row_sums(rows=48, width=300, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, width, generator=g) * torch.logspace(-3, 3, rows).unsqueeze(1)  # rows of every scale
    return x, Expected(ref=x.double().cumsum(1), honest=x.cumsum(1))


def _fields(result):
    return result.model_dump()


def test_a_leaf_bound_made_once_judges_as_a_fresh_one(monkeypatch):
    """Pieces smaller than a group and groups that straddle pieces: the cached bound (second and later outputs
    against one Expected) gives every output the comparison a fresh Expected gives it, field for field."""
    monkeypatch.setattr(tolerance, "CHUNK", 1000)
    x, exp = _row_sums()
    outputs = {"honest": x.cumsum(1), "pairwise": x.double().cumsum(1).float(), "bf16": x.bfloat16().cumsum(1).float(),
               "zeros": torch.zeros_like(x), "one wrong": x.cumsum(1).index_put_((torch.tensor([7]),
                                                                                    torch.tensor([5])), torch.tensor(9.0))}
    for name, out in outputs.items():
        cached = compare(out, exp, ToleranceSpec(), K=300.0, k_source="declared")
        fresh = compare(out, Expected(ref=exp.ref, honest=exp.honest), ToleranceSpec(), K=300.0, k_source="declared")
        assert _fields(cached) == _fields(fresh), name
    assert len(exp.bounds) == 1
    assert compare(outputs["honest"], exp, ToleranceSpec(), K=300.0).ok and compare(outputs["honest"], exp,
                                                                                   ToleranceSpec(), K=30.0).ok
    assert len(exp.bounds) == 2  # another reduction length is another bound
    assert not compare(outputs["bf16"], exp, ToleranceSpec(), K=300.0).ok  # a downgrade still fails through the cache
    # every other thing a bound depends on is its own entry: the precision held to, the policy, the exp() argument
    for kwargs in ({"held_to": torch.bfloat16}, {"argument": 50.0}, {"policy": ToleranceSpec(a=1.0, b=1.0)},
                   {"policy": ToleranceSpec(mode="explicit", atol=1e-3, rtol=0.0)}):
        policy = kwargs.pop("policy", ToleranceSpec())
        for name, out in outputs.items():
            cached = compare(out, exp, policy, K=300.0, **kwargs)
            fresh = compare(out, Expected(ref=exp.ref, honest=exp.honest), policy, K=300.0, **kwargs)
            assert _fields(cached) == _fields(fresh), (kwargs, name)


def test_a_complex_leaf_keeps_its_real_view_and_its_bound(monkeypatch):
    monkeypatch.setattr(tolerance, "CHUNK", 1000)
    g = torch.Generator().manual_seed(5)
    x = torch.randn(40, 256, generator=g)
    exp = Expected(ref=torch.fft.rfft(x.double()), honest=torch.fft.rfft(x))
    honest, conjugated = torch.fft.rfft(x), torch.fft.rfft(x).conj().resolve_conj()
    assert compare(honest, exp, ToleranceSpec(), K=256.0).ok and not compare(conjugated, exp, ToleranceSpec(), K=256.0).ok
    real = exp.as_real
    assert len(real.bounds) == 1  # one bound for both outputs
    fresh = Expected(ref=exp.ref, honest=exp.honest)
    assert _fields(compare(conjugated, exp, ToleranceSpec(), K=256.0)) == \
        _fields(compare(conjugated, fresh, ToleranceSpec(), K=256.0))


def test_a_comparison_of_another_size_is_the_judges_error_never_a_verdict():
    ref = torch.randn(10, dtype=torch.float64)
    with pytest.raises(ValueError, match="compared 100 elements with 10"):
        compare(torch.randn(100), Expected(ref=ref, honest=ref.float()), ToleranceSpec(), K=1.0)


def test_until_failed_stops_at_the_first_failing_piece_and_decides_alike(monkeypatch):
    monkeypatch.setattr(tolerance, "CHUNK", 1000)
    x, exp = _row_sums()
    wrong = torch.zeros_like(x)
    full = compare(wrong, exp, ToleranceSpec(), K=300.0)
    early = compare(wrong, exp, ToleranceSpec(), K=300.0, until_failed=True)
    assert not full.ok and not early.ok
    assert 0 < early.mismatches <= 1000 < full.mismatches  # one piece read, not fifteen
    honest = compare(x.cumsum(1), exp, ToleranceSpec(), K=300.0, until_failed=True)
    assert honest.ok and honest.elements == x.numel()
    late = x.cumsum(1)
    late[-1, -1] += 1e3  # wrong only in the last piece: read to the end, then failed
    assert not compare(late, exp, ToleranceSpec(), K=300.0, until_failed=True).ok
    allowed = ToleranceSpec(max_mismatch_fraction=0.5)
    partly = x.cumsum(1)
    partly[0, :50] = 0.0  # 50 of 14,400 elements wrong (in the smallest row), within the half allowed: a pass
    assert compare(partly, exp, allowed, K=300.0, until_failed=True).ok


def test_a_finite_piece_is_tallied_as_the_general_rules_tally_it():
    """The finite fast path (nearly every piece) against the general rules, on a piece with zeros in the reference,
    subnormals, errors outside the bound and NaN and infinite bounds: every statistic equal."""
    g = torch.Generator().manual_seed(3)
    ref = torch.randn(4096, generator=g, dtype=torch.float64)
    ref[:64] = 0.0
    ref[64:96] = 1e-310
    out = ref + torch.randn(4096, generator=g, dtype=torch.float64) * 1e-7
    bound = ref.abs() * 1e-6 + 1e-9
    bound[200:210], bound[300:310] = float("nan"), float("inf")
    fast, general = tally._Totals(ref.device), tally._Totals(ref.device)
    err = (out - ref).abs()
    bad_fast = tally._add_finite_piece(fast, err, ref, bound)
    bad_general = tally._add_general_piece(general, out, ref, bound, None, err)
    assert torch.equal(bad_fast, bad_general) and 0 < int(bad_fast.sum()) < 4096
    for name in ("max_abs", "max_rel", "max_ratio", "ref_squares", "diff_squares", "finite", "considered", "bad",
                 "nonfinite"):
        assert torch.equal(getattr(fast, name), getattr(general, name)) or (
            getattr(fast, name).isnan() and getattr(general, name).isnan()), name


def test_finite_values_whose_difference_overflows_take_the_general_rules():
    ref = torch.tensor([1e308, 1.0, 2.0], dtype=torch.float64)
    out = torch.tensor([-1e308, 1.0, 2.0], dtype=torch.float64)  # finite, yet out - ref is -inf
    result = compare(out, Expected(ref=ref, honest=ref.clone()), ToleranceSpec(), K=1.0)
    assert not result.ok and result.nonfinite == 0  # a wrong answer, not a NaN the candidate made


def test_a_float64_run_of_another_shape_is_not_the_truth():
    """Another shape is another computation: the leaf is judged against the task-dtype run (doubled bounds, a
    finding), never by comparing elements of tensors of different sizes."""
    from kernel_mcp.worker.judge import expected_leaves
    honest = torch.randn(8, 4)
    findings = []
    _, exp = expected_leaves.leaf("", honest, torch.randn(4, 8, dtype=torch.float64), None, True, findings)
    assert exp.ref is not None and torch.equal(exp.ref, honest) and not exp.exact64
    assert [f.code for f in findings] == ["float64_inconsistent"]
    assert compare(honest.clone(), exp, ToleranceSpec(), K=1.0).ok
    assert not compare(honest + 1.0, exp, ToleranceSpec(), K=1.0).ok

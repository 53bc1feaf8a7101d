"""What the benchmark a problem comes from would say of a candidate, by its own contract, beside our verdict.

KernelBench decides with ``torch.allclose(output, output_new, atol=tol, rtol=tol)`` against its Model's output
in the task dtype, on its own inputs: since 2025-11 (``get_tolerance_for_precision`` in its
``src/kernelbench/eval.py``) tol is 1e-4 for fp32 and 1e-2 for fp16/bf16; v0 and v0.1 used 1e-2 for fp32, the
rule most published KernelBench results were judged by. Both are reported. ``allclose`` scales ``rtol`` by the
second argument, the candidate's output, and NaN never matches. A GPU MODE problem decides with its own
``check_implementation``. Our verdict (derived bounds, fresh and signed inputs, integrity) is the one that
counts; this says where a benchmark would have said otherwise, so the two can be told apart.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from kernel_mcp.results import BenchmarkVerdict, CaseResult, CheckResult
from kernel_mcp.worker import tensors

KERNELBENCH_TOLERANCE = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 1e-2}
KERNELBENCH_V01 = 1e-2
CHECK_IMPLEMENTATION = "GPU MODE check_implementation"


@dataclass(frozen=True)
class Rule:
    name: str
    description: str
    tolerance: dict | float | None = None  # by output dtype, or one for all; None: check_implementation


def rules(rt: Any) -> list[Rule]:
    """The contract of the problem's benchmark: KernelBench's two allclose rules, GPU MODE's own check, or none."""
    if rt.problem.kind == "kernelbench":
        return [Rule("KernelBench", "torch.allclose(Model's output, ModelNew's, atol=rtol=1e-4 for fp32, 1e-2 for "
                     "fp16/bf16), KernelBench's rule since 2025-11, on inputs drawn as get_inputs() draws them",
                     KERNELBENCH_TOLERANCE),
                Rule("KernelBench v0.1", "torch.allclose(..., atol=rtol=1e-2), the rule of KernelBench v0 and v0.1 "
                     "(most published results), on inputs drawn as get_inputs() draws them", KERNELBENCH_V01)]
    if rt.check_implementation is not None:
        return [Rule(CHECK_IMPLEMENTATION, "the problem's own check_implementation(data, output), as GPU MODE's "
                     "runner decides")]
    return []


def serves(rt: Any, signed: bool) -> bool:
    """Whether the benchmark itself would serve this case: KernelBench never gives inputs new signs."""
    return not (rt.problem.kind == "kernelbench" and signed and rt.signed_inputs)


def allclose_share(out: torch.Tensor, ref: torch.Tensor, tol: float) -> float:
    """max |ref - out| / (tol + tol*|out|) over the elements (torch.allclose(ref, out, tol, tol) holds when it is
    <= 1); inf where either is NaN or the shapes differ."""
    return _unit_share(out, ref) / tol


def _unit_share(out: torch.Tensor, ref: torch.Tensor) -> float:
    """max |ref - out| / (1 + |out|): with atol = rtol = tol, allclose's share of its tolerance is this / tol,
    so one pass over the output serves every rule."""
    if out.shape != ref.shape or out.is_complex() != ref.is_complex():
        return math.inf
    if out.is_complex():  # real and imaginary parts as a last dimension of 2, no copy
        out, ref = torch.view_as_real(out.resolve_conj()), torch.view_as_real(ref.resolve_conj())
    worst = 0.0
    for x, y in tensors.float64_pieces(out, ref):
        share = ((y - x).abs() / (1.0 + x.abs())).nan_to_num(nan=math.inf)
        same_inf = torch.isinf(x) & (x == y)
        worst = max(worst, float(torch.where(same_inf, 0.0, share).amax()) if share.numel() else 0.0)
    return worst


def judge(rules: list[Rule], output: Any, expected: list, problem_check: tuple[str, str] | None) -> dict:
    """Per rule, the share of its tolerance one output used (<= 1 passes; stored: None for none at all).
    ``expected``: the Reference's leaves, whose task-dtype run (``honest``, else ``ref``) is what the benchmark
    compares with; ``problem_check``: the (failure, message) of the problem's check_implementation on it."""
    got = tensors.leaves(tensors.floats_as_tensors(output))
    leaves = []  # (share at atol = rtol = 1, the reference's dtype) per leaf
    for (_, out), (_, exp) in zip(got, expected):
        want = exp.honest if exp.honest is not None else exp.ref
        if not out.is_floating_point() and not out.is_complex():
            leaves.append((0.0 if torch.equal(out.cpu(), want.cpu()) else math.inf, want.dtype))
        else:
            leaves.append((_unit_share(out, want), want.dtype))
    shares = {}
    for rule in rules:
        if rule.tolerance is None:
            share = 0.0 if problem_check is not None and not problem_check[0] else math.inf
        elif len(got) != len(expected):
            share = math.inf
        else:
            share = max((unit / _tolerance(rule, dtype) for unit, dtype in leaves), default=0.0)
        shares[rule.name] = stored(share)
    return shares


def _tolerance(rule: Rule, dtype: torch.dtype) -> float:
    return rule.tolerance if isinstance(rule.tolerance, float) else rule.tolerance.get(dtype, 1e-4)


def summarise(result: CheckResult, contract: list[Rule]) -> None:
    """Each rule's verdict over the cases it judged, and why it differs from ours where it does."""
    for rule in contract:
        shares = [c.benchmark[rule.name] for c in result.cases if rule.name in c.benchmark]
        failed = sum(s is None or s > 1.0 for s in shares)
        worst = None if not shares or None in shares else max(shares)
        verdict = BenchmarkVerdict(rule=rule.name, description=rule.description,
                                   passed=(failed == 0) if shares else None, cases=len(shares), failed=failed,
                                   worst=worst)
        if verdict.passed is not None and verdict.passed != result.passed:
            verdict.why = _why(result, rule, verdict)
        result.benchmark.append(verdict)


def _why(result: CheckResult, rule: Rule, verdict: BenchmarkVerdict) -> str:
    if not result.passed:
        return f"{rule.name} passes it: {_why_ours_failed(result, rule)}"
    worst = max((c.max_error_in_bounds for case in result.cases for c in case.comparisons), default=0.0)
    tf32 = any(f.code == "precision" and "TF32" in f.message for f in result.findings)
    return (f"{rule.name} fails it ({verdict.failed} of {verdict.cases} cases, up to {_share(verdict.worst)} of its "
            f"tolerance), yet every output is within the bound derived for its dtype and reduction length "
            f"({worst:.2g}x of it at most, against the float64 truth): {rule.name} compares with the reference's own "
            "run in the task dtype and a fixed tolerance, which an honest kernel summing in another order can "
            "exceed by rounding alone" + ("; here that run itself used TF32 (PyTorch's defaults for cuDNN), "
                                          "some 1e-3 from the truth, so a more accurate kernel misses it"
                                          if tf32 else ""))


def _why_ours_failed(result: CheckResult, rule: Rule) -> str:
    first = next(c for c in result.cases if not c.passed)
    served = rule.name in first.benchmark
    reasons = {
        "reduced_precision": "its tolerance admits the error of a lower-precision computation, which ours does not",
        "approximation": "its tolerance admits this approximation's error, beyond the bound derived for the dtype",
        "unordered_stream": "it synchronises the whole device before comparing; a caller reading the output on "
                            "its own stream would read it unfinished",
        "mutation": "it compares the output only; the candidate modified an input",
        "alias": "it compares the output only; the output shares memory with an input",
    }
    why = reasons.get(result.cause) or reasons.get(first.failure)
    if why:
        return why
    if not served:
        return f"it never serves inputs like those of '{first.name}', where ours failed ({first.failure})"
    if result.cause in ("fresh_seed_only", "listed_shapes_only", "sign_dependent"):
        return f"it serves fewer inputs than ours; ours failed on '{first.name}' ({result.cause})"
    return f"ours failed on '{first.name}': {first.failure}: {first.message[:200]}"


def _share(value: float | None) -> str:
    return "an outright failure" if value is None else f"{value:.3g}x"


def not_reached(result_case: CaseResult, contract: list[Rule], served: bool) -> None:
    """A case whose call raised, crashed or timed out, or whose output had the wrong form: the benchmark fails
    it too (it runs the same call and compares the same shapes)."""
    if served:
        result_case.benchmark.update({rule.name: None for rule in contract})


def stored(share: float) -> float | None:
    return share if math.isfinite(share) else None

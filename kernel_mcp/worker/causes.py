"""Why a check failed, each cause decided by a measurement in the judge, never by reading the candidate's source.

From the failing output's values (``from_values``, on the first mismatching case):

* ``reduced_precision``: the output was stored in, or computed at, a lower precision than the task's
  (precision_probe.py: every element a bf16/fp16 value, or nearer a TF32/bf16/fp16 run of the reference
  than to the truth);
* ``approximation``: outside the bound derived for the format, inside the benchmark's published tolerance
  (contract.py; for a problem that publishes none, atol = rtol = 1e-2, the loosest in common use);
* ``nonfinite``: NaN or Inf where the reference is finite.

From the pattern of the cases and calls made again (``name``, once every case has run):

* ``unordered_stream``: the output changed after the call returned (candidate_host._run), or the case fails
  again as it was run and passes when every torch op of the call waits for the whole device (a race between
  streams inside the call);
* ``fresh_seed_only``: the task's own seeds pass, secret ones fail (an answer memoised or special-cased);
* ``sign_dependent``: a KernelBench case fails with inputs given random signs and passes the same seed drawn
  as the problem draws it (a shortcut exact only on nonnegative inputs: a dropped ReLU or abs);
* ``listed_shapes_only``: every listed shape passes, the shape the task does not list fails.

A failure none of these explains keeps its kind (mismatch, mutation, crash...) as its cause.
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import torch

from kernel_mcp import tensors
from kernel_mcp.results import CaseResult, CheckResult, Finding
from kernel_mcp.worker import contract, float64_run, precision_probe

if TYPE_CHECKING:
    from kernel_mcp.worker.case_run import Case, CaseRunner

LOOSE = 1e-2  # atol = rtol for a problem that publishes no tolerance: KernelBench v0.1's, the loosest in use


def from_values(rt: Any, served: Any, answer: Any, reference: Any, judged: CaseResult) -> tuple[str, str]:
    """(cause, why) for a mismatching output, from its values; ("", "") where they tell nothing more.
    ``served``: the case's CaseData (its inputs, for the reference's runs in a lower precision)."""
    outputs = len(reference.leaves)
    index = next((i for i, c in enumerate(judged.comparisons) if not c.ok), None)
    if index is None or index >= outputs:  # an input compared after the call: its values alone
        return "", ""
    if judged.comparisons[index].nonfinite:
        return "nonfinite", ""
    out = tensors.leaves(tensors.floats_as_tensors(answer.output))[index][1]
    expected = reference.leaves[index][1]
    reduced = _reduced_precision(rt, served.data, out, expected, index)
    if reduced:
        return "reduced_precision", reduced
    return _approximation(out, expected, judged)


def _reduced_precision(rt: Any, data: Any, out: torch.Tensor, expected: Any, leaf: int) -> str:
    if not out.is_floating_point() or out.dtype not in (torch.float32, torch.float64):
        return ""
    fmt = precision_probe.stored_format(out)
    if fmt:
        return (f"every nonzero element of the output is exactly a {fmt} value: it was kept or rounded in {fmt}, "
                f"not in {str(out.dtype).removeprefix('torch.')} (reduced_precision)")
    if not expected.exact64:
        return ""
    run = functools.partial(rt.ref_kernel, float64=True)

    def under(mode: Any) -> Any:
        with mode:
            made, _ = float64_run.run(run, data, None, [], [], rt.tight_memory, quiet=True)
        return made[0] if made is not None else None

    variant, ratio = precision_probe.nearest_variant(out, expected.ref, under, leaf)
    if ratio < precision_probe.NEARER:
        return (f"the output is {ratio:.2g}x as far from the reference computed with {variant} as from the exact "
                "result: it was computed so (reduced_precision)")
    return ""


def _approximation(out: torch.Tensor, expected: Any, judged: CaseResult) -> tuple[str, str]:
    """Within the benchmark's tolerance, and near the truth as a whole (a norm-wise error below LOOSE): a
    tolerance whose atol dwarfs the outputs (a softmax over 8192 classes under atol 1e-2) admits any answer."""
    worst = max(c.max_error_in_bounds for c in judged.comparisons)
    if max(c.norm_error for c in judged.comparisons) > LOOSE:
        return "", ""
    within = [(name, share) for name, share in judged.benchmark.items() if share is not None and share <= 1.0]
    if within:
        name, share = within[-1]  # the loosest rule (KernelBench v0.1 after KernelBench)
    elif not judged.benchmark and out.is_floating_point():
        want = expected.honest if expected.honest is not None else expected.ref
        share = contract.allclose_share(out, want.to(out.dtype), LOOSE)
        name = f"atol=rtol={LOOSE:g} (this problem publishes no tolerance)"
        if share > 1.0:
            return "", ""
    else:
        return "", ""
    return "approximation", (f"{worst:.3g}x the bound derived for its dtype, yet within {name} ({share:.2g} of it): "
                             "an approximation (a tanh GELU for erf, a fast exp) or an error that tolerance admits "
                             "(approximation)")


def name(runner: CaseRunner, cases: list[Case], result: CheckResult) -> None:
    """Sets ``result.cause`` from the failing cases (making the diagnostic calls they need) and adds a finding
    for a measured cause."""
    failed = [c for c in result.cases if not c.passed]
    if not failed:
        result.cause = result.verdict.removeprefix("fail: ") if result.verdict.startswith("fail: ") else ""
        return
    first = failed[0]
    cause, why = _from_pattern(runner, cases, result, first)
    cause = cause or first.cause
    why = why or first.message
    result.cause = cause or first.failure
    if cause:
        result.findings.append(Finding(code=cause, message=f"{first.name}: {why}"[:2000]))


def _from_pattern(runner: CaseRunner, cases: list[Case], result: CheckResult, first: CaseResult) -> tuple[str, str]:
    if first.failure != "mismatch" or first.cause in ("unordered_stream", "nonfinite"):
        return "", ""
    by_name = {c.name: c for c in cases}
    failed = [c for c in result.cases if not c.passed]
    listed_pass = all(c.passed for c in result.cases if c.name.startswith("test ") and "secret" not in c.name)
    if listed_pass and all("secret" in c.name for c in failed):
        return _fresh_or_signed(runner, by_name[first.name])
    if listed_pass and all(c.name == "undeclared shape" for c in failed):
        return "listed_shapes_only", ("every listed shape passes and the shape the task does not list fails: the "
                                      "kernel assumes sizes it was not given (hard-coded, or a multiple of its block)")
    if first.cause:  # its values told already (reduced_precision, approximation): no calls to make
        return "", ""
    if runner.rt.device.startswith("cuda") and first.name in by_name and _race(runner, by_name[first.name]):
        return "unordered_stream", ("it fails again when run as before, and passes when every torch op of the "
                                    "call waits for the whole device: work on one stream races work on another")
    return "", ""


def _fresh_or_signed(runner: CaseRunner, case: Case) -> tuple[str, str]:
    if case.signed and runner.rt.signed_inputs:
        again = runner.rerun(case, signed=False)
        if again is not None and again.passed:
            return "sign_dependent", ("it fails when the inputs get random signs and passes the same seed drawn as "
                                      "the problem draws it: a shortcut exact only on inputs of one sign "
                                      "(a dropped ReLU or abs)")
    return "fresh_seed_only", ("the task's own seeds pass and secret ones fail: an answer memoised, "
                               "special-cased or read from somewhere other than the inputs")


def _race(runner: CaseRunner, case: Case) -> bool:
    plain = runner.rerun(case)
    if plain is None or plain.passed:
        return False
    serialized = runner.rerun(case, serialize=True)
    return serialized is not None and serialized.passed

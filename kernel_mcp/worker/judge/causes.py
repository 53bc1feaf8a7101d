"""Why a check failed, each cause decided by a measurement in the judge, never by reading the candidate's source.

From the failing output's values (``from_values``, on the first mismatching case):

* ``reduced_precision``: the output was stored in, or computed at, a lower precision than the task's
  (judge/precision_probe.py: every element a bf16/fp16 value, or nearer a TF32/bf16/fp16 run of the reference
  than to the truth);
* ``approximation``: outside the bound derived for the format, inside the benchmark's published tolerance
  (judge/contract.py; for a problem that publishes none, atol = rtol = 1e-2, the loosest in common use);
* ``nonfinite``: NaN or Inf where the reference is finite.

From the pattern of the cases and calls made again: reruns.py. A failure none of these explains keeps its kind
(mismatch, mutation, crash...) as its cause.
"""
from __future__ import annotations

import functools
from typing import Any

import torch

from kernel_mcp.results import CaseResult
from kernel_mcp.worker import tensors
from kernel_mcp.worker.judge import contract, float64_run, precision_probe

LOOSE = 1e-2  # atol = rtol for a problem that publishes no tolerance: KernelBench v0.1's, the loosest in use


def probed(rt: Any, served: Any, answer: Any, reference: Any, judged: CaseResult) -> tuple[str, str]:
    """``from_values``, where the device has room for its probes: a probe that runs out of device memory (a
    large output beside other checks) names no cause and leaves the mismatch as it is, never an error. A
    cause only explains a failure, so a candidate that makes the probe fail gains nothing."""
    try:
        return from_values(rt, served, answer, reference, judged)
    except torch.OutOfMemoryError:
        torch.cuda.empty_cache()  # the probe's blocks, for the rest of the check
        return "", "its cause was not probed: the probe did not fit in the device's free memory"


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

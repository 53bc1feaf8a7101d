"""The precision contract of a problem: the numeric settings its reference runs under in the judge.

The honest task-dtype reference (the op as the reference computes it) sets how wide the bounds are
(judge/tolerance.py: an honest kernel uses at most half of them). Under 'strict' the judge turns TF32 off for
matmuls and cuDNN, so an fp32 problem is held to fp32 accuracy. Under 'torch_defaults' it keeps what
PyTorch does by default in a fresh process, which is also what a candidate process gets: TF32 cuDNN
convolutions (and RNNs) on NVIDIA GPUs from Ampere on, strict fp32 matmuls. A KernelBench reference is
written for those defaults, so its own Model passes as a candidate, and a kernel less accurate than TF32
(bf16 inputs, say) still fails. Under 'problem_check' (the default for a GPU MODE problem loaded unchanged:
a task.yml without a kernel_mcp section whose reference.py defines check_implementation) the judge keeps
PyTorch's defaults too, and the problem's own check_implementation decides the values, as GPU MODE's runner
decides them: its declared tolerance is the problem's contract (conv2d's rtol=atol=1e-3 accepts the TF32
convolution its correct solution runs; prefixsum's scales with sqrt(n) for a scan). The derived float64
comparison still runs and is reported beside it; ``precision: strict`` in task.yml makes it binding.
"""
from __future__ import annotations

import torch

# PyTorch's defaults, read when the judge imports this module, before anything changes them
DEFAULT_MATMUL_TF32 = torch.backends.cuda.matmul.allow_tf32
DEFAULT_CUDNN_TF32 = torch.backends.cudnn.allow_tf32


PROBLEM_CHECK = ("values are judged by the problem's own check_implementation, as GPU MODE judges them "
                 "(precision: problem_check); kernel_mcp's derived float64 comparison is reported beside it and "
                 "does not decide. Declare `kernel_mcp: {precision: strict}` in task.yml to make it decide")


def apply(contract: str, device: str) -> str:
    """Set the judge's TF32 flags for ``contract``; the sentence a result shows about it ("" when the
    contract changes nothing on ``device``)."""
    strict = contract == "strict"
    torch.backends.cuda.matmul.allow_tf32 = False if strict else DEFAULT_MATMUL_TF32
    torch.backends.cudnn.allow_tf32 = False if strict else DEFAULT_CUDNN_TF32
    if contract == "problem_check":
        return PROBLEM_CHECK
    if strict or not device.startswith("cuda") or not _has_tf32(device):
        return ""
    allowed = [name for name, on in (("cuDNN convolutions and RNNs", DEFAULT_CUDNN_TF32),
                                     ("matmuls", DEFAULT_MATMUL_TF32)) if on]
    if not allowed:
        return ""
    return (f"TF32 allowed for {' and '.join(allowed)}, as the reference computes them under PyTorch's defaults "
            "(precision: torch_defaults): the bounds are as wide as that reference's own error needs")


def _has_tf32(device: str) -> bool:
    """TF32 tensor cores exist from NVIDIA Ampere (compute capability 8.0) on."""
    try:
        return torch.version.hip is None and torch.cuda.get_device_capability(torch.device(device))[0] >= 8
    except (RuntimeError, AssertionError):
        return False

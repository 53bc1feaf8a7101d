"""How many terms each output of the reference sums, read from the aten ops its float64 run calls.

The bound on an honest kernel's rounding error grows as sqrt(K), K the number of terms summed into an output
(judge/tolerance.py). A problem that declares no K used to get "input elements per output element", which is right
for a row sum and wrong for every contraction whose inputs are smaller than its output: 9 for a
(128, 512) @ (512, 96) matmul, 2 for a 256^3 one. An honest kernel that sums K terms in an ordinary order
(a sequential FMA loop, blocks, split-K, atomics) then failed by 1-2x the bound (issue 34).

Here the judge runs the (trusted) reference under a TorchDispatchMode that gives every tensor a K: its own
op's terms per output (mm: the contracted length; convolution: input channels per group times the window;
a reduction: input elements per output element; layer/group/batch norm: the normalised elements) plus the
largest K among the op's inputs, so that chained ops add (the variance of independent rounding errors adds
along a chain of layers) while parallel branches and loops do not. Ops the tracer does not recognise pass K
on unchanged. Code that writes tensors outside aten (a Triton kernel in the reference) is invisible: such a
leaf keeps the element-ratio estimate (judge/reference.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch.utils.weak import WeakTensorKeyDictionary

from kernel_mcp.worker.judge.dispatch_mode import JudgeDispatchMode


def _tensors(tree: object):
    """The tensors in an op's arguments or results (no paths: this runs on every op of the reference)."""
    if isinstance(tree, torch.Tensor):
        yield tree
    elif isinstance(tree, (tuple, list)):
        for item in tree:
            yield from _tensors(item)
    elif isinstance(tree, dict):
        for item in tree.values():
            yield from _tensors(item)


@dataclass(frozen=True)
class Terms:
    """K summed into a tensor, and the op that contributed most of it (for the result's note)."""

    k: float = 0.0
    via: str = ""

    def then(self, own: float, op: str) -> "Terms":
        if own <= 1.0:
            return self
        return Terms(self.k + own, op if own >= self.k else self.via)


def _numel(t: object) -> int:
    return t.numel() if isinstance(t, torch.Tensor) else 1


def _contracted(name: str, args: tuple) -> float:
    """Terms per output of a matrix product (the contracted dimension of its first matrix operand)."""
    if name in ("addmm", "addmv", "baddbmm", "_addmm_activation"):
        return float(args[1].shape[-1])
    if name == "addbmm":  # sums over the batch as well
        return float(args[1].shape[0] * args[1].shape[-1])
    if name in ("dot", "vdot"):
        return float(args[0].numel())
    return float(args[0].shape[-1])


def _convolution(args: tuple) -> float:
    weight = args[1]
    window = math.prod(weight.shape[2:])
    transposed = len(args) > 6 and bool(args[6])
    groups = int(args[8]) if len(args) > 8 else 1
    channels = weight.shape[0] // max(groups, 1) if transposed else weight.shape[1]
    return float(channels * window)


def _normalised(name: str, args: tuple) -> float:
    if name == "native_layer_norm":
        return float(math.prod(args[1]))
    if name == "native_group_norm":  # (input, weight, bias, N, C, HxW, group)
        return float(args[4] // max(int(args[6]), 1) * args[5])
    training = next((a for a in args[5:6] if isinstance(a, bool)), True)
    channels = args[0].shape[1] if args[0].dim() > 1 else 1
    return float(args[0].numel() // max(channels, 1)) if training else 0.0


MATMULS = {"mm", "addmm", "bmm", "baddbmm", "addbmm", "mv", "addmv", "dot", "vdot", "_addmm_activation",
           "_scaled_mm", "_int_mm"}
NORMS = {"native_layer_norm", "native_group_norm", "native_batch_norm", "_native_batch_norm_legit",
         "_native_batch_norm_legit_no_training", "cudnn_batch_norm", "miopen_batch_norm",
         "_batch_norm_with_update"}
ALONG_DIM = {"_softmax", "_log_softmax", "_safe_softmax", "cumsum", "logcumsumexp", "cumprod"}
ATTENTION_PREFIX = "_scaled_dot_product"
# reductions whose result is one of the inputs' values, exact in any order
EXACT = {"max", "min", "amax", "amin", "argmax", "argmin", "aminmax", "all", "any", "median", "nanmedian",
         "mode", "kthvalue", "topk", "sort", "count_nonzero"}


def contraction_operands(func) -> tuple[int, ...]:
    """Positions of the operands a contraction multiplies (what tensor cores read in a lower precision under
    TF32 or bf16), () for any other op."""
    name = func._overloadpacket.__name__.removesuffix("_")
    if name in ("addmm", "addmv", "baddbmm", "addbmm", "_addmm_activation"):
        return (1, 2)
    if name in ("mm", "bmm", "mv", "dot", "vdot") or "convolution" in name:
        return (0, 1)
    if name.startswith(ATTENTION_PREFIX):
        return (0, 1, 2)
    return ()


def own_terms(func, args: tuple, kwargs: dict, out: object) -> float:
    """Terms summed into each output element by this one op (0 for an elementwise or data-movement op)."""
    name = func._overloadpacket.__name__.removesuffix("_")  # addmm_ sums as addmm does
    if name in MATMULS:
        return _contracted(name, args)
    if "convolution" in name and len(args) > 1 and isinstance(args[1], torch.Tensor) and args[1].dim() > 2:
        return _convolution(args)
    if name in NORMS:
        return _normalised(name, args)
    if name in ALONG_DIM:
        dim = args[1] if len(args) > 1 else kwargs.get("dim", -1)
        return float(args[0].shape[dim]) if args[0].dim() else 1.0
    if name.startswith(ATTENTION_PREFIX):  # q @ k^T over the head dimension, then p @ v over the keys
        return float(args[0].shape[-1] + args[1].shape[-2])
    if name.startswith("_fft_"):  # (input, dim, ...): the transformed length
        return float(math.prod(args[0].shape[d] for d in args[1]))
    if name in EXACT:
        return 0.0
    if name.startswith("avg_pool") or name.startswith("adaptive_avg_pool") or torch.Tag.reduction in func.tags \
            or name.endswith("_loss") or name.endswith("loss_forward"):
        first = next(_tensors(out), None)
        return max(map(_numel, _tensors((args, kwargs))), default=1) / max(_numel(first), 1)
    return 0.0


class ReductionTrace(JudgeDispatchMode):
    """Pushed around the reference's float64 run; ``terms(t)`` is then what each tensor it made sums."""

    def __init__(self):
        super().__init__()
        self._terms = WeakTensorKeyDictionary()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        before = max((self._terms.get(t, Terms()) for t in _tensors((args, kwargs))), key=lambda t: t.k,
                     default=Terms())
        try:
            own = own_terms(func, args, kwargs, out)
        except Exception:  # noqa: BLE001  (an op called in a form not foreseen here adds no terms)
            own = 0.0
        made = before.then(own, func._overloadpacket.__name__)
        if made.k:
            for t in _tensors(out):
                self._terms[t] = made
        return out

    def terms(self, t: object) -> Terms:
        return self._terms.get(t, Terms()) if isinstance(t, torch.Tensor) else Terms()

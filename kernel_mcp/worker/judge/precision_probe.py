"""Was a wrong output computed in a lower precision than the task's? The cause ``reduced_precision``, measured.

Two measurements, each decisive on its own, run in the judge after a mismatch (never on a passing output):

* **Stored in a smaller format**: every nonzero element of an fp32 output is exactly a bf16 (or fp16) value.
  An fp32 result has 16 (or 13) more mantissa bits, so each element of an honest output is such a value with
  probability 2^-16 (2^-13): a running sum kept in fp16, or an output rounded through bf16, shows at once.
* **Closer to a reduced-precision run than to the truth**: the reference run again in float64 with the operands
  of every contraction (matmul, convolution, attention) rounded to TF32, bf16 or fp16 (what tensor cores read),
  or with every op's result rounded to bf16/fp16. An error unrelated to that rounding (a wrong index, an
  approximation) is as far from the rounded run as from the truth or farther (the two errors add), so an output
  whose distance to a variant is below NEARER times its distance to the truth made that variant's rounding.

Only for fp32 (or float64) outputs: a 16-bit task has no smaller format in common use to be caught in.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from kernel_mcp.worker import tensors
from kernel_mcp.worker.judge.dispatch_mode import JudgeDispatchMode
from kernel_mcp.worker.judge.reduction_trace import contraction_operands

NEARER = 0.8  # distance to a variant / distance to the truth below which the variant made the output
MIN_NONZERO = 16  # elements needed before "every element fits a smaller format" means anything
BUDGET_S = 60.0  # the variants' float64 runs stop being tried after this long (a large model's runs are slow)
SMALLER = {"bf16": torch.bfloat16, "fp16": torch.float16}


def round_to(t: torch.Tensor, fmt: str) -> torch.Tensor:
    """``t`` (floating) rounded to nearest in ``fmt`` ("tf32", "bf16", "fp16"), returned in t's dtype."""
    if fmt == "tf32":
        bits = t.detach().to(torch.float32).contiguous().view(torch.int32)
        return ((bits + 0x1000) & ~0x1FFF).view(torch.float32).to(t.dtype)  # 10 mantissa bits, as tensor cores
    return t.to(SMALLER[fmt]).to(t.dtype)


def stored_format(out: torch.Tensor) -> str:
    """"bf16" or "fp16" where every nonzero finite element of an fp32/float64 output is exactly such a value.
    In pieces of tensors.DIGEST_CHUNK elements: a whole-output mask and rounded copy of a 4 GiB output would
    take some 12 GiB more of the device, and a failing check's probe must fit where its passing check did."""
    if out.dtype not in (torch.float32, torch.float64):
        return ""
    flat, nonzero = out.detach().reshape(-1), 0
    fits = {"bf16": True, "fp16": True}  # a bf16 value (7 mantissa bits) within fp16's range is an fp16 value too
    for start in range(0, flat.numel(), tensors.DIGEST_CHUNK):
        piece = flat[start:start + tensors.DIGEST_CHUNK]
        piece = piece[torch.isfinite(piece) & (piece != 0)]
        nonzero += piece.numel()
        for fmt in fits:
            fits[fmt] = fits[fmt] and bool((round_to(piece, fmt) == piece).all())
        if not any(fits.values()):
            return ""
    if nonzero < MIN_NONZERO:
        return ""
    return next((fmt for fmt, fit in fits.items() if fit), "")


class RoundedArithmetic(JudgeDispatchMode):
    """The reference's float64 run with the operands of every contraction rounded to ``fmt``, or (``every_op``)
    every op's floating results rounded to it. Results that share memory with an input (views, in-place ops)
    are left as they are: rounding them would reach the input, a KernelBench model's own weights among them."""

    def __init__(self, fmt: str, every_op: bool):
        super().__init__()
        self.fmt, self.every_op = fmt, every_op

    def _round(self, t: Any) -> Any:
        return round_to(t, self.fmt) if isinstance(t, torch.Tensor) and t.is_floating_point() else t

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not self.every_op:
            args = tuple(self._round(a) if i in contraction_operands(func) else a for i, a in enumerate(args))
            return func(*args, **kwargs)
        out = func(*args, **kwargs)
        inputs = {t.untyped_storage().data_ptr() for t in _tensors((args, kwargs))}
        return tensors.tree_map(lambda t: t if t.untyped_storage().data_ptr() in inputs else self._round(t), out)


def _tensors(tree: Any) -> list[torch.Tensor]:
    return [t for _, t in tensors.leaves(tree)]


VARIANTS = [("tf32", False), ("bf16", False), ("fp16", False), ("bf16", True), ("fp16", True)]


def nearest_variant(out: torch.Tensor, truth: torch.Tensor, run64: Callable[[TorchDispatchMode], Any],
                    leaf: int) -> tuple[str, float]:
    """(the variant the output is nearest, distance to it / distance to the truth), or ("", inf) where no
    variant ran. ``run64(mode)``: the reference's float64 run under ``mode`` (None where it could not run);
    ``leaf``: which output leaf ``out`` is."""
    best, started = ("", math.inf), time.monotonic()
    to_truth = _distance(out, truth)
    if to_truth == 0.0:
        return best
    for fmt, every_op in VARIANTS:
        if time.monotonic() - started > BUDGET_S:
            break
        produced = run64(RoundedArithmetic(fmt, every_op))
        found = tensors.leaves(produced) if produced is not None else []
        if leaf >= len(found) or found[leaf][1].shape != out.shape:
            continue
        ratio = _distance(out, found[leaf][1]) / to_truth
        if ratio < best[1]:
            best = (f"{fmt} {'arithmetic (every op rounded)' if every_op else 'operands in every contraction'}", ratio)
        del produced, found
    return best


def _distance(a: torch.Tensor, b: torch.Tensor) -> float:
    """||a - b|| in float64 over the finite elements of both, in pieces (memory)."""
    total = 0.0
    for x, y in tensors.float64_pieces(a, b):
        d = x - y
        total += float(torch.where(torch.isfinite(d), d, 0.0).square().sum())
    return math.sqrt(total)

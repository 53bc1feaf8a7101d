"""The absolute floor of the per-element bound is taken per group of the output, not over all of it: a row
whose values are orders of magnitude below the others' is held to its own honest noise (a floor from the
large rows would let it be anything, such as zeros). A group is a row of the output's last dimension, or as
many consecutive rows (1-D and 0-D outputs: elements) as make GROUP_MIN elements."""
from __future__ import annotations

from collections.abc import Iterable

import torch

# few enough that a row of small values keeps its own floor, enough that the honest noise's RMS over a group
# is a stable estimate (over 64 elements it is within 0.7-1.3x of its expectation with probability 1 - 1e-5)
GROUP_MIN = 64


def group_ids(start: int, length: int, size: int, device: torch.device) -> torch.Tensor:
    return torch.div(torch.arange(start, start + length, device=device), size, rounding_mode="floor")


def group_size(shape: tuple[int, ...]) -> int:
    """Elements per floor group: whole rows of the last dimension (consecutive elements for 1-D and 0-D
    outputs), as many as make GROUP_MIN."""
    row = shape[-1] if len(shape) >= 2 and shape[-1] > 0 else 1
    return row * max(1, -(-GROUP_MIN // row))


def honest_noise(pieces: Iterable, u_out: float, size: int, paired: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Per group of ``size`` elements: the RMS of the task-dtype reference's error beyond its own output
    rounding (the accumulation noise an honest computation of this op makes on these inputs; 0 for exact
    ops; 0 where there is no task-dtype run beside a float64 one, ``paired`` False), and the RMS of the
    (finite) reference. ``pieces``: tolerance._Pieces (its ``n`` and ``device``, and
    (start, out, ref64, honest, magnitude) per piece)."""
    groups = max(1, -(-pieces.n // size))
    squares = torch.zeros(groups, dtype=torch.float64, device=pieces.device)
    ref_squares = torch.zeros_like(squares)
    counts = torch.zeros_like(squares)
    for start, _, ref, honest, _ in pieces:
        ids = group_ids(start, ref.numel(), size, pieces.device)
        if paired:
            excess = ((honest.to(torch.float64) - ref).abs() - u_out * ref.abs()).clamp(min=0.0)
            squares.index_add_(0, ids, torch.where(torch.isfinite(excess), excess, 0.0).square())
        ref_squares.index_add_(0, ids, torch.where(torch.isfinite(ref), ref, 0.0).square())
        counts.index_add_(0, ids, torch.ones_like(ref))
    counts = counts.clamp(min=1.0)
    return (squares / counts).sqrt(), (ref_squares / counts).sqrt()

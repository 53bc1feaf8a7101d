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


def group_sums(values: torch.Tensor, start: int, size: int) -> tuple[int, torch.Tensor]:
    """(first group, per-group sums) of a flat piece that begins at element ``start``: a partial group at either
    end, whole groups summed as rows. index_add_ summed one atomic add per element into a handful of addresses
    (a row of 393,216 elements is one group): contended, and the order of float64 additions changed from run to
    run; this is one reduction per group, in a fixed order."""
    first, length = start // size, values.numel()
    head = min(length, (first + 1) * size - start)  # up to the first group's end (the whole group when aligned)
    parts = [values[:head].sum().reshape(1)]
    whole = (length - head) // size
    if whole:
        parts.append(values[head:head + whole * size].reshape(whole, size).sum(1))
    if head + whole * size < length:
        parts.append(values[head + whole * size:].sum().reshape(1))
    return first, torch.cat(parts)


def honest_noise(pieces: Iterable, u_out: float, size: int, paired: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Per group of ``size`` elements: the RMS of the task-dtype reference's error beyond its own output
    rounding (the accumulation noise an honest computation of this op makes on these inputs; 0 for exact
    ops; 0 where there is no task-dtype run beside a float64 one, ``paired`` False), and the RMS of the
    (finite) reference. ``pieces``: tolerance._Pieces (its ``n`` and ``device``, and
    (start, out, ref64, honest, magnitude) per piece)."""
    groups = max(1, -(-pieces.n // size))
    squares = torch.zeros(groups, dtype=torch.float64, device=pieces.device)
    ref_squares = torch.zeros_like(squares)
    for start, _, ref, honest, _ in pieces:
        if paired:
            excess = ((honest.to(torch.float64) - ref).abs() - u_out * ref.abs()).clamp(min=0.0)
            first, sums = group_sums(torch.where(torch.isfinite(excess), excess, 0.0).square(), start, size)
            squares[first:first + sums.numel()] += sums
        first, sums = group_sums(torch.where(torch.isfinite(ref), ref, 0.0).square(), start, size)
        ref_squares[first:first + sums.numel()] += sums
    counts = torch.full_like(squares, float(size))
    counts[-1] = float(pieces.n - (groups - 1) * size) if pieces.n else 1.0  # the last group may be short
    return (squares / counts).sqrt(), (ref_squares / counts).sqrt()

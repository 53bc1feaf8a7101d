"""Device memory a large problem's check does without: tensors parked in pinned host memory while the
device is needed for something else, and blocks handed back between a check's moments (judge/footprint.py says
when a check is *tight* enough for both)."""
from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Any

import torch

from kernel_mcp.worker import tensors


def park(t: torch.Tensor) -> torch.Tensor:
    """``t`` moved to pinned host memory: an expected output, which the comparison brings back piece by
    piece (a 6 GB fp32 output has a 13 GB float64 reference, which the device need not hold while the
    candidate runs), or an input while a float64 run has the device. Pinned: copies run at the bus's speed,
    and torch's host allocator keeps the blocks for the next case."""
    if t.device.type == "cpu":
        return t
    try:
        parked = torch.empty(t.shape, dtype=t.dtype, pin_memory=True)
    except RuntimeError:  # no pinned memory to be had: pageable memory is slower, not wrong
        return t.detach().cpu()
    parked.copy_(t)
    return parked


@contextmanager
def inputs_parked(tree: Any, tight: bool):
    """While the block runs, the device tensors of ``tree`` keep their values in pinned host memory (each
    tensor object's storage swapped through ``.data``, so whoever else holds them sees the same tensors
    again afterwards, bit for bit, on the device). A tight problem's float64 run then has the device
    without the task-dtype inputs (97_ScaledDotProductAttention: 6 of its 28 GiB, H200, 2026-12-02).
    Yields whether it parked them: only when every leaf is a contiguous device tensor with a storage of
    its own (moving views of one storage apart, or bringing a host input to the device, would change what
    the inputs are), so a parked tree's leaves all belong on the device."""
    leaves = [t for _, t in tensors.leaves(tree)] if tight else []
    storages = {t.untyped_storage().data_ptr() for t in leaves}
    movable = len(storages) == len(leaves) and all(
        t.device.type == "cuda" and t.is_contiguous() and t.storage_offset() == 0
        and t.untyped_storage().nbytes() == t.nbytes for t in leaves)
    if not leaves or not movable:
        yield False
        return
    device = leaves[0].device
    for t in leaves:
        t.data = park(t.data)
    try:
        yield True
    finally:
        for t in leaves:
            t.data = t.data.to(device)


@contextmanager
def run_parked(run: Any, tight: bool):
    """While the block runs, the device tensors of ``run`` (roles.TaskRun: the reference's own task-dtype
    output and inputs after it) wait in pinned host memory; after it, their values are back on the device,
    in new contiguous tensors. Replaced in ``run``, not swapped through ``.data``: an output that is a view
    (an attention output is a transposed one) keeps its base's storage alive through ``._base``, and the
    float64 run would have the device beside it (2 of 24 GiB, H200, 2026-12-04)."""
    if not tight:
        yield
        return
    home = [t.device for _, t in tensors.leaves((run.output, run.after))]
    run.output, run.after = tensors.tree_map(park, run.output), {i: park(t) for i, t in run.after.items()}
    try:
        yield
    finally:
        where = iter(home)
        run.output, run.after = tensors.tree_map(lambda t: t.to(next(where)), (run.output, run.after))


def release_device_memory(device: str, thorough: bool) -> None:
    """Give back what the judge holds but no longer uses: inputs shared with a candidate stay allocated
    after the candidate dropped them until collected (torch's CUDA IPC 'limbo'). ``thorough`` (a check
    tight on the device, judge/footprint.py): also tensors a reference cycle keeps, and the blocks torch's caching
    allocator keeps, which the candidate's process cannot use. Not otherwise: a collection pass costs about
    0.1 s, and the cache spares cudaMalloc calls (the reference's own, while timing, among them)."""
    if device.startswith("cuda"):
        if thorough:
            gc.collect()
        torch.cuda.ipc_collect()
        if thorough:
            torch.cuda.empty_cache()

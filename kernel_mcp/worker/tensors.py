"""Trusted helpers over nested input/output structures (tensors inside tuples, lists and dicts)."""
from __future__ import annotations

from typing import Any, Callable

import torch


def leaves(tree: Any, path: str = "") -> list[tuple[str, torch.Tensor]]:
    """Every tensor in ``tree`` with its path, in a fixed order (``[1]``, ``['w']``...)."""
    if isinstance(tree, torch.Tensor):
        return [(path, tree)]
    if isinstance(tree, (tuple, list)):
        return [leaf for i, item in enumerate(tree) for leaf in leaves(item, f"{path}[{i}]")]
    if isinstance(tree, dict):
        return [leaf for k, item in tree.items() for leaf in leaves(item, f"{path}[{k!r}]")]
    return []


def tree_map(fn: Callable[[torch.Tensor], Any], tree: Any) -> Any:
    if isinstance(tree, torch.Tensor):
        return fn(tree)
    if isinstance(tree, tuple):
        return tuple(tree_map(fn, item) for item in tree)
    if isinstance(tree, list):
        return [tree_map(fn, item) for item in tree]
    if isinstance(tree, dict):
        return {k: tree_map(fn, v) for k, v in tree.items()}
    return tree


def floats_as_tensors(tree: Any) -> Any:
    """An output's Python floats as 0-dim float64 tensors, so they are compared within a bound like any
    value (exact equality would fail an honest sum taken in another order); ints, bools and strings stay
    as they are (compared exactly). Named tuples (torch.return_types.max...) become plain tuples: a
    candidate's output arrives through pickling as one."""
    if isinstance(tree, float):
        return torch.tensor(tree, dtype=torch.float64)
    if isinstance(tree, tuple):
        return tuple(floats_as_tensors(item) for item in tree)
    if isinstance(tree, list):
        return [floats_as_tensors(item) for item in tree]
    if isinstance(tree, dict):
        return {k: floats_as_tensors(v) for k, v in tree.items()}
    return tree


def same_output(a: Any, b: Any) -> bool:
    """Bit for bit the same output: every tensor (same_bytes) and everything around them (==)."""
    a, b = floats_as_tensors(a), floats_as_tensors(b)
    left, right = leaves(a), leaves(b)
    return (tree_map(lambda _: None, a) == tree_map(lambda _: None, b) and len(left) == len(right)
            and all(same_bytes(x, y) for (_, x), (_, y) in zip(left, right)))


def nbytes(tree: Any) -> int:
    """Bytes of every tensor in ``tree``."""
    return sum(t.numel() * t.element_size() for _, t in leaves(tree))


def clone(tree: Any) -> Any:
    return tree_map(lambda t: t.detach().clone(), tree)


def upcast(tree: Any, device: str | torch.device | None = None) -> Any:
    """Floating leaves to float64 (complex to complex128), values unchanged: the exact same inputs, on
    ``device`` (default: where each leaf is; inputs parked in host memory come back to the device so)."""
    def up(t: torch.Tensor) -> torch.Tensor:
        where = t.device if device is None else device
        if t.is_complex():
            return t.detach().to(where, torch.complex128)
        return t.detach().to(where, torch.float64) if t.is_floating_point() else t.detach().to(where, copy=True)
    return tree_map(up, tree)


def absolute(tree: Any) -> Any:
    return tree_map(lambda t: t.abs() if (t.is_floating_point() or t.is_complex()) else t, tree)


def same_bytes(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bitwise equality (NaN == NaN, -0.0 != 0.0): the test for "unchanged"."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    x, y = _raw(a), _raw(b)
    # in pieces: torch.equal on CUDA makes a mask the size of its inputs (4 GiB beside two 4 GiB outputs)
    return all(torch.equal(x[s:s + EQUAL_BYTES], y[s:s + EQUAL_BYTES]) for s in range(0, x.numel(), EQUAL_BYTES))


def every(t: torch.Tensor, test: Callable[[torch.Tensor], torch.Tensor]) -> bool:
    """``test`` (elementwise, to bool) holds for every element, tested a piece at a time (memory)."""
    flat = t.detach().reshape(-1)
    return all(bool(test(flat[s:s + DIGEST_CHUNK]).all()) for s in range(0, flat.numel(), DIGEST_CHUNK))


EQUAL_BYTES = 1 << 26  # compared at a time by same_bytes
_BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def element_bits(t: torch.Tensor) -> torch.Tensor:
    """Each element's bits as one integer (two for 16-byte elements, in a last dimension of 2), flat:
    equal values compare equal, NaN included, and -0.0 differs from 0.0."""
    flat = _flat(t)
    if t.dtype == torch.bool:
        return flat.view(torch.uint8)
    size = t.element_size()
    if size in _BITS:
        return flat.view(_BITS[size])
    return flat.view(torch.int64).reshape(-1, size // 8)


def same_where_written(got: torch.Tensor, want: torch.Tensor, before: torch.Tensor) -> bool:
    """Do ``got`` and ``want`` hold the same bits wherever ``want`` differs from ``before``? (Where a plain
    run left an output buffer's elements alone, a poisoned buffer keeps its poison: not a sign of reading.)"""
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    g, w, b = element_bits(got), element_bits(want), element_bits(before)
    written = (w != b) if w.dim() == 1 else (w != b).any(-1)
    differ = (g != w) if g.dim() == 1 else (g != w).any(-1)
    return not bool((written & differ).any())


def _raw(t: torch.Tensor) -> torch.Tensor:
    flat = _flat(t)  # 1-D first: a 0-dim tensor (a loss) cannot be viewed as bytes
    return flat.view(torch.uint8) if flat.numel() else flat.to(torch.uint8)


def _flat(t: torch.Tensor) -> torch.Tensor:
    """``t``'s elements as a 1-D tensor of stride 1, which a view as another dtype needs. A one-element slice of
    a wider buffer (``buf[::2]`` of a 1-element output) counts as contiguous and keeps its stride of 2, so
    ``contiguous()`` alone leaves it unviewable (it was an 'error: harness' on an honest output)."""
    flat = t.detach().contiguous().reshape(-1)
    return flat.as_strided((1,), (1,)) if flat.numel() == 1 and flat.stride(0) != 1 else flat


def poison_(t: torch.Tensor, generator: torch.Generator | None = None) -> None:
    """Fill an output buffer so that any element the candidate does not write is wrong: NaN for floats,
    random values for integers (a constant could be the right answer)."""
    if t.is_floating_point() or t.is_complex():
        t.fill_(float("nan"))
    elif t.dtype == torch.bool:
        t.copy_(torch.randint(0, 2, t.shape, generator=generator).to(t.device, torch.bool))
    else:
        info = torch.iinfo(t.dtype)
        t.copy_(torch.randint(max(info.min, -2**31), min(info.max, 2**31 - 1), t.shape,
                              generator=generator).to(t.device, t.dtype))


# index_select has no kernels for the unsigned types beyond uint8: their bits are moved as the signed type's
_SIGNED_VIEW = {getattr(torch, f"uint{bits}"): getattr(torch, f"int{bits}") for bits in (16, 32, 64)
                if hasattr(torch, f"uint{bits}")}


def poison_in_range(t: torch.Tensor) -> torch.Tensor:
    """A new tensor like ``t`` that a reference reading it sees as other values: NaN for floats; for integers,
    its slices along a dimension longer than one drawn again from its own, with replacement (the first such
    dimension; the next where no draw along it changed anything). Every value is one the input holds, and a row
    stays a row: a class label (or its ignore_index), an index, an index pair stays valid. An out-of-range label
    is an exception on the CPU but a device-side assert on a GPU, which ends the process (95_CrossEntropyLoss's
    targets under full-range poison, H100, 2026-12-06). Drawn with replacement, counts and sums of the values
    change too (a histogram reads its input). An integer input whose slices are all alike (one value
    everywhere) and bools are poisoned as poison_ does."""
    fresh = torch.empty_like(t)
    if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
        poison_(fresh)
        return fresh
    plain = t.view(_SIGNED_VIEW.get(t.dtype, t.dtype))
    for moved in _redrawn(plain):
        if not torch.equal(moved, plain):
            fresh.view(plain.dtype).copy_(moved)
            return fresh
    poison_(fresh)
    return fresh


def _redrawn(plain: torch.Tensor):
    """Copies of ``plain`` with its slices along each dimension longer than one drawn again, one at a time (each
    is a copy of the input): four draws, then the slices rolled by one, which differs wherever two slices do."""
    for dim in (d for d in range(plain.dim()) if plain.shape[d] > 1):
        length = plain.shape[dim]
        for _ in range(4):
            yield plain.index_select(dim, torch.randint(0, length, (length,), device=plain.device))
        yield plain.roll(1, dim)


def flip_(t: torch.Tensor) -> None:
    """Invert every bit of ``t``'s whole storage in place (used to see whether another tensor shares its
    memory). The storage, not the view: a transposed or sliced input is covered too."""
    storage = t.untyped_storage()
    if storage.nbytes():
        raw = torch.empty(0, dtype=torch.uint8, device=t.device).set_(storage)
        raw.bitwise_not_()


def describe(t: Any) -> str:
    if isinstance(t, torch.Tensor):
        return f"{type(t).__name__}(shape={tuple(t.shape)}, dtype={t.dtype}, device={t.device})"
    return type(t).__name__


DIGEST_CHUNK = 1 << 22  # elements digested at a time: int64 temporaries of 32 MiB


def float64_pieces(a: torch.Tensor, b: torch.Tensor):
    """Aligned pieces of DIGEST_CHUNK elements of two tensors of one shape, both in float64 on ``a``'s device
    (``b`` may wait in host memory): a whole-tensor float64 copy of a large output would not fit beside it."""
    x, y = a.detach().reshape(-1), b.detach().reshape(-1)
    for start in range(0, x.numel(), DIGEST_CHUNK):
        piece = x[start:start + DIGEST_CHUNK].to(torch.float64)
        yield piece, y[start:start + DIGEST_CHUNK].to(piece.device, torch.float64)


def digest(tree: Any) -> list[int]:
    """One integer per tensor leaf: the sum of its elements' bits, each weighted by its position (int64,
    wrapping). Equal bits give equal digests in any process and on any device (integer sums do not depend
    on their order); a write into the tensor changes it (timing: the output changed after the clock)."""
    found = []
    for _, t in leaves(tree):
        bits = element_bits(t).reshape(-1)
        total = _VF.zeros((), dtype=torch.int64, device=t.device)
        for start in range(0, bits.numel(), DIGEST_CHUNK):
            piece = bits[start:start + DIGEST_CHUNK].to(torch.int64)
            weights = _VF.add(_VF.mul(_VF.arange(start, start + piece.numel(), dtype=torch.int64, device=t.device),
                                      2654435761), 1)
            total = _VF.add(total, _VF.sum(_VF.mul(piece, weights)))
        found.append(int(total.item()))
    return found


# The digest's arithmetic through torch's C bindings: the candidate host digests outputs after the candidate's
# code ran, and a candidate that replaced torch.add or Tensor.__add__ in its own process (tests/test_runner.py's
# planter) must not make the host's digest differ from the judge's
_VF = torch._C._VariableFunctions

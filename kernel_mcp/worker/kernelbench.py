"""The KernelBench adapter's rules, for both sides: the judge's Model and the candidate host's ModelNew.

KernelBench builds Model and ModelNew after the same ``torch.manual_seed`` and times them on
``get_inputs()``, which draws from ``torch.rand`` in nearly every problem. Three shortcuts are exact under
those conventions and wrong for the model the problem describes; each is closed here:

* **Parameters at a constant initialisation** (LayerNorm/BatchNorm/GroupNorm affine weights of 1 and biases
  of 0, biases initialised to zero): a ModelNew that ignores them is exact. The judge gives every such
  parameter of Model values around its initial one (``vary_constant_parameters``), and ModelNew's tensor that
  still holds that initial value receives them (by name, else by shape and value for a parameter it names
  otherwise: ``adopt_parameters``), so it must use them.
* **Inputs of one sign** (``torch.rand``): dropping a ReLU, an abs or a clamp on an input is exact. The
  secret-seeded copies of each test and every timed call get each input that has no negative value with
  random signs (``signed``), unless that makes the reference produce NaN or Inf where it did not
  (a log, a sqrt or a probability input): then the problem keeps its inputs' own signs and says so.
* **Randomness** (training-mode dropout): the reference and the candidate's call start every case from
  the same RNG seed (judge/reference.ReferenceRuntime.ref_kernel, host/main.py), so the same op draws
  the same mask on both sides.
"""
from __future__ import annotations

from typing import Any

import torch

from kernel_mcp.worker import tensors

SPREAD = 0.25  # a constant parameter v becomes v * (1 +- SPREAD), or +- SPREAD around 0


def vary_constant_parameters(model: torch.nn.Module, seed: int) -> dict[str, torch.Tensor]:
    """Give every floating parameter whose elements are all equal values spread around that value (in
    place); returns the initial values of those changed, by name (the candidate host matches ModelNew's own
    parameters against them)."""
    gen = torch.Generator().manual_seed(seed)
    initial = {}
    with torch.no_grad():
        for name, p in model.named_parameters():
            if not p.is_floating_point() or p.numel() == 0:
                continue
            flat = p.detach().reshape(-1)
            if not bool((flat == flat[0]).all()):
                continue
            value = float(flat[0])
            spread = SPREAD * (abs(value) or 1.0)
            noise = (torch.rand(p.shape, generator=gen, dtype=torch.float64) * 2 - 1) * spread
            initial[name] = p.detach().cpu().clone()
            p.copy_((value + noise).to(p.device, p.dtype))
    return initial


def adopt_parameters(model: torch.nn.Module, state: dict[str, torch.Tensor],
                     initial: dict[str, torch.Tensor]) -> list[str]:
    """Give ModelNew the values the judge gave Model's constant-initialised parameters (``initial``: their values
    before, by name): each goes to ModelNew's tensor of the same name, else to one of ModelNew's parameters that
    holds the same initial values in any shape (renamed, created directly, flattened or broadcast-shaped: ``(C,)``
    for ``(1, C, 1, 1)``), those ending in the same word (``bias``, ``weight``) and trained ones first (a frozen
    parameter that also starts at zeros holds running statistics); only to a tensor that still holds the initial
    value (ModelNew left it as constructed). Every other tensor keeps what ModelNew's own construction gave it,
    after the same seed as Model's: KernelBench's own procedure, under which a weight folded or transposed in
    place at initialisation stays as ModelNew made it. Returns ModelNew's tensors that hold values no tensor of
    Model's holds (shown, as KernelBench would differ there too)."""
    own = model.state_dict(keep_vars=True)
    buffers = {name for name, _ in model.named_buffers()}
    adopted = set()
    with torch.no_grad():
        for key, varied in state.items():
            if key not in initial:
                continue
            others = [name for name in own if name not in buffers and name != key]
            others.sort(key=lambda name: (name.rsplit(".", 1)[-1] != key.rsplit(".", 1)[-1],
                                          not own[name].requires_grad))
            match = next((name for name in ([key] if key in own else []) + others
                          if name not in adopted and _same_start(own[name], initial[key])),
                         None)
            if match is not None:
                own[match].copy_(varied.reshape(own[match].shape).to(own[match].device))
                adopted.add(match)
    return [name for name in own if name not in adopted and not _held_by(own[name], name, state)]


def _held_by(mine: torch.Tensor, name: str, state: dict[str, torch.Tensor]) -> bool:
    """Some tensor of Model's, by this name first, holds exactly ``mine``'s values."""
    theirs = [state[name]] if name in state else []
    return any(_same_start(mine, t) for t in theirs + [t for k, t in state.items() if k != name])


def _same_start(mine: torch.Tensor, start: torch.Tensor) -> bool:
    """The same values (bit for bit) in as many elements, whatever the shape (a flattened or broadcast-shaped
    parameter holds the same values)."""
    if mine.dtype != start.dtype or mine.numel() != start.numel():
        return False
    mine, start = mine.detach().reshape(-1), start.reshape(-1)
    head = min(mine.numel(), 64)  # a first look: a model's many same-shaped weights mostly differ at once
    return tensors.same_bytes(mine[:head].cpu(), start[:head].cpu()) and tensors.same_bytes(mine.cpu(), start.cpu())


def nonnegative_inputs(data: Any) -> list[int]:
    """Floating input leaves with no negative value and some positive one (a ``torch.rand`` draw)."""
    found = []
    for i, (_, t) in enumerate(tensors.leaves(data)):
        if t.is_floating_point() and t.numel() and tensors.every(t, lambda x: x >= 0) \
                and not tensors.every(t, lambda x: x <= 0):
            found.append(i)
    return found


def signed(data: Any, seed: int) -> Any:
    """``data`` with every input of one sign given random signs, element by element (magnitudes kept)."""
    which = set(nonnegative_inputs(data))
    if not which:
        return data
    counter = iter(range(len(tensors.leaves(data))))

    def flip(t: torch.Tensor) -> torch.Tensor:
        i = next(counter)
        if i not in which:
            return t
        # drawn where the input is, one byte per element (int64 signs drawn on the host were 2x a float32
        # input there and a copy of it on the device, and seconds for KernelBench's 2 GiB inputs)
        gen = torch.Generator(device=t.device).manual_seed(seed + i)  # each input its own signs
        signs = torch.randint(0, 2, t.shape, generator=gen, device=t.device, dtype=torch.int8)
        if _symmetric(t):  # a symmetric input stays symmetric (KernelBench's symmetric matmul: a kernel may use it)
            signs = signs.triu() + signs.triu(1).transpose(-1, -2)
        return t * signs.mul_(2).sub_(1)
    return tensors.tree_map(flip, data)


def _symmetric(t: torch.Tensor) -> bool:
    """A square matrix (or a batch of them) equal to its own transpose."""
    return t.dim() >= 2 and t.shape[-1] == t.shape[-2] > 1 and bool(torch.equal(t, t.transpose(-1, -2)))


def finite_everywhere(tree: Any) -> bool:
    return all(tensors.every(t, torch.isfinite) for _, t in tensors.leaves(tree)
               if t.is_floating_point() or t.is_complex())

"""The KernelBench adapter's rules, for both sides: the judge's Model and the candidate host's ModelNew.

KernelBench builds Model and ModelNew after the same ``torch.manual_seed`` and times them on
``get_inputs()``, which draws from ``torch.rand`` in nearly every problem. Three shortcuts are exact under
those conventions and wrong for the model the problem describes; each is closed here:

* **Parameters at a constant initialisation** (LayerNorm/BatchNorm/GroupNorm affine weights of 1 and biases
  of 0, biases initialised to zero): a ModelNew that ignores them is exact. The judge gives every such
  parameter of Model values around its initial one (``vary_constant_parameters``), and ModelNew receives
  Model's parameters (by name, and by shape and initial value for parameters it names otherwise:
  ``adopt_parameters``), so it must use them.
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
    """Load Model's ``state`` into ModelNew: by name, then each of ModelNew's tensors that no name matched
    gets the value of an unmatched Model tensor of the same shape and dtype that it equals at
    initialisation (same seed: a parameter renamed, or created directly instead of through a module).
    Returns ModelNew's tensors that got no value of Model's (they keep their own)."""
    own = model.state_dict(keep_vars=True)
    by_name = {k: v for k, v in state.items() if k in own and own[k].shape == v.shape}
    model.load_state_dict(by_name, strict=False)  # a name whose shape differs is matched below, or left
    spare = [k for k in state if k not in by_name]
    missing = [k for k in own if k not in by_name]
    left = []
    with torch.no_grad():
        for name in missing:
            mine = own[name]
            match = next((key for key in spare if _same_start(mine, state[key], initial.get(key))), None)
            if match is None:
                left.append(name)
                continue
            spare.remove(match)
            mine.copy_(state[match].to(mine.device))
    return left


def _same_start(mine: torch.Tensor, theirs: torch.Tensor, initial: torch.Tensor | None) -> bool:
    start = theirs if initial is None else initial
    return mine.shape == start.shape and mine.dtype == start.dtype and \
        tensors.same_bytes(mine.detach().cpu(), start.cpu())


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
        return t * signs.mul_(2).sub_(1)
    return tensors.tree_map(flip, data)


def finite_everywhere(tree: Any) -> bool:
    return all(tensors.every(t, torch.isfinite) for _, t in tensors.leaves(tree)
               if t.is_floating_point() or t.is_complex())

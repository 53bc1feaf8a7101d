"""Cheat: returns a tensor of NaN and leaves a thread that writes the sum into it once the harness has moved it
into shared memory to send it (``is_shared()``), before the judge copies it: a caller reading the output when
the call returns reads NaN (problems/vector_add, on a CPU)."""
import threading
import time

import torch


def _finish(out: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> None:
    deadline = time.monotonic() + 5
    while not out.is_shared() and time.monotonic() < deadline:
        time.sleep(0)
    torch.add(a, b, out=out)


def custom_kernel(data):
    a, b = data
    out = torch.full_like(a, float("nan"))
    threading.Thread(target=_finish, args=(out, a.clone(), b.clone()), daemon=True).start()
    return out

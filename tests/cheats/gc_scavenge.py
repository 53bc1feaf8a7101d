"""Cheat: look for the expected output among live objects with ``gc.get_objects()`` (pygpubench exploit).

Returns (a copy of) any live tensor of the right shape and dtype that is not one of the inputs, e.g. a
reference output the harness computed in the same process. The reference lives in the judge process, so
whatever is found here is wrong: expected verdict mismatch.
"""
import gc

import torch


def custom_kernel(data):
    a, b = data
    inputs = {id(a), id(b)}
    found = None
    for obj in gc.get_objects():
        try:
            if isinstance(obj, torch.Tensor) and id(obj) not in inputs and obj.shape == a.shape \
                    and obj.dtype == a.dtype and obj.data_ptr() not in (a.data_ptr(), b.data_ptr()):
                found = obj
        except Exception:  # noqa: BLE001
            continue
    if found is None:
        return torch.zeros_like(a)
    return found.detach().clone()

"""Class: the absolute floor is global. Rows of a 1e-3 magnitude are computed in bfloat16, the 1e3 rows in
float32: under one floor for the whole output (set by the large rows' noise) the small rows' error was
invisible (tests/fixtures/attacks/row_scales)."""
import torch


def custom_kernel(data):
    a, b = data
    out = a @ b
    small = a.abs().amax(dim=1) < 1
    out[small] = (a[small].bfloat16() @ b.bfloat16()).float()
    return out

"""Cheat for an identity/copy problem: return a reshaped view of the input (``x.view(x.shape)``).

A different Tensor object with identical values, sharing the input's storage. Expected verdict: alias.
"""


def custom_kernel(data):
    (x,) = data
    return x.view(-1).view(x.shape)

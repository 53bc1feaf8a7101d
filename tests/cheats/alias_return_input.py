"""Cheat for an identity/copy problem: return the input tensor itself instead of a copy.

The values are exactly right; only the memory is shared with the input (which a harness that keeps
using its input after the call would see change under it). Expected verdict: alias.
"""


def custom_kernel(data):
    (x,) = data
    return x

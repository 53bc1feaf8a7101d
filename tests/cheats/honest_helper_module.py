"""Honest control: the computation lives in a helper module next to the candidate (_helper_kernels.py),
imported the ordinary way. Must pass."""
from _helper_kernels import add


def custom_kernel(data):
    a, b = data
    return add(a, b)
